import { afterAll, beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import type { Deps } from '../../src/deps'
import { captureMailOut, headerSafe } from '../../src/mail/system'
import { pipelineMailOut, systemSenderCheck } from '../../src/modules/emails/system'
import { createOutbound } from '../../src/mail/outbound'
import { requestPasswordReset, signup } from '../../src/modules/auth/service'
import { invite } from '../../src/modules/members/service'
import { forEachStore } from '../helpers/env'
import { startSink } from '../helpers/smtp'
import { lastMail, ownedProject, uniqueEmail, verifiedUser } from '../helpers/accounts'
import { dkimOf, mxTo, projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { must } from '../helpers/must'
import { deliveryStore } from '../../src/modules/emails/delivery'

/**
 * System mail (verification, password reset, invitation) through the outbound pipeline from
 * MAILCTL_SYSTEM_FROM, DKIM-signed, to a real SMTP sink; captured only without a usable sender.
 */

interface ParsedMail { subject?: string; text?: string; headers: Map<string, unknown>; from?: { value: Array<{ address: string }> } }
const { simpleParser } = require('mailparser') as { simpleParser: (raw: Buffer) => Promise<ParsedMail> }

const rnd = () => Math.random().toString(36).slice(2, 8)
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
afterAll(async () => { await sink.close(); await dns.close() })

forEachStore('system mail', (env) => {
  let p: Awaited<ReturnType<typeof projectWithDomain>>
  let deps: Deps
  let from = ''

  beforeAll(async () => {
    p = await projectWithDomain(env, dns, `ops-${rnd()}.test`)
    from = `noreply@${p.domain}`
    const capture = captureMailOut(env.store, from, env.clock)
    deps = { ...env.deps, config: { ...env.config, systemFrom: from }, mail: pipelineMailOut(() => deps, capture) }
  })

  async function deliverAll(d: Deps = deps) {
    const pl = createOutbound(d, deliveryStore, { signerThreads: 0, pollMs: 50 })
    env.onStop(() => pl.stop())
    await pl.drain()
    await pl.stop()
  }
  const received = (to: string) => sink.received.filter((m) => m.to.includes(to))

  test('verification and password-reset mail is delivered DKIM-signed from MAILCTL_SYSTEM_FROM, not captured', async () => {
    const email = `new.${rnd()}@dest.test`
    await signup(deps, { email, password: 'correct horse battery staple' }, { ip: null })
    await requestPasswordReset(deps, email, { ip: null })
    await deliverAll()
    const msgs = received(email)
    expect(msgs).toHaveLength(2)
    for (const m of msgs) {
      expect((await dkimOf(m.raw, dns))[0].status.result).toBe('pass')
      const parsed = await simpleParser(m.raw)
      expect(parsed.from?.value[0].address).toBe(from)
      expect(parsed.headers.get('auto-submitted')).toBe('auto-generated')
    }
    const subjects = (await Promise.all(msgs.map(async (m) => (await simpleParser(m.raw)).subject))).sort()
    expect(subjects).toEqual(['Reset your mailctl password', 'Verify your email address for mailctl'])
    expect(await lastMail(env, email)).toBeUndefined()
    // The emails belong to the project of the verified domain, as system mail, without a contact.
    const e = env.store.t.emails
    const rows = await env.store.db.select().from(e).where(and(eq(e.projectId, p.id), eq(e.toAddress, email)))
    expect(rows.map((r) => [r.sourceType, r.status, r.contactId])).toEqual([['system', 'DELIVERED', null], ['system', 'DELIVERED', null]])
  })

  test('a project name cannot inject headers into an invitation', async () => {
    const owner = await verifiedUser(env, 'owner')
    const proj = await ownedProject(env, owner)
    const evil = 'Evil\r\nBcc: victim@dest.test\r\nX-Injected: yes'
    await env.store.tx((db) => db.update(env.store.t.projects).set({ name: evil }).where(eq(env.store.t.projects.id, proj.id)))
    const to = `invitee.${rnd()}@dest.test`
    await invite(deps, owner.id, proj.id, { email: to, role: 'MEMBER' })
    await deliverAll()
    const [m] = received(to)
    expect(m.to).toEqual([to])
    expect(received('victim@dest.test')).toHaveLength(0)
    const head = m.raw.toString('latin1').split('\r\n\r\n')[0]
    expect(head).not.toMatch(/^Bcc:/im)
    expect(head).not.toMatch(/^X-Injected:/im)
    const parsed = await simpleParser(m.raw)
    // The name is the inviter's text: not in the subject (issue 35, item 4), one quoted line in the body.
    expect(parsed.subject).toBe(`${owner.email} invited you to a project on mailctl`)
    expect(parsed.text).toContain('"Evil Bcc: victim@dest.test X-Injected: yes"')
    expect(parsed.text).toContain('/app/invitations?token=')
    expect(headerSafe('a\r\nb\u2028c\td')).toBe('a b c d')
  })

  test('MAILCTL_SYSTEM_FROM unset, or on a domain no project verified: captured, nothing queued', async () => {
    for (const systemFrom of [null, `noreply@unverified-${rnd()}.test`]) {
      const capture = captureMailOut(env.store, systemFrom ?? 'mailctl@mx.mailctl.test', env.clock)
      const d: Deps = { ...env.deps, config: { ...env.config, systemFrom }, mail: pipelineMailOut(() => d, capture) }
      const email = uniqueEmail('captured')
      await requestPasswordReset(d, email, { ip: null })
      await signup(d, { email, password: 'correct horse battery staple' }, { ip: null })
      expect(must(await lastMail(env, email, 'verify-email'), 'the captured mail').subject).toBe('Verify your email address for mailctl')
      const e = env.store.t.emails
      expect(await env.store.db.select().from(e).where(eq(e.toAddress, email))).toEqual([])
    }
  })

  test('doctor: system mail is ok when its domain is verified, a warning when unset or unverified', async () => {
    expect(await systemSenderCheck({ ...env.config, systemFrom: from }, env.store)).toEqual({ status: 'ok', detail: `from ${from}, DKIM-signed as ${p.domain} (project ${p.id})` })
    expect((await systemSenderCheck({ ...env.config, systemFrom: null }, env.store))?.status).toBe('warn')
    const unverified = await systemSenderCheck({ ...env.config, systemFrom: 'noreply@nobody-verified.test' }, env.store)
    expect(unverified?.status).toBe('warn')
    expect(unverified?.detail).toContain('not a verified domain')
    expect(await systemSenderCheck({ ...env.config, outbound: 'capture', systemFrom: null }, env.store)).toMatchObject({ status: 'ok' })
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
