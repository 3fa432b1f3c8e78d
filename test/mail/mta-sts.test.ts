import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { mxMatches, parsePolicy, stsRecordId } from '../../src/mail/outbound/mta-sts'
import { forEachStore } from '../helpers/env'
import { startSink } from '../helpers/smtp'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../modules/emails/fixture'

/**
 * MTA-STS (RFC 8461) in direct delivery: the policy's parsing, and delivery to domains whose policy
 * host (HTTPS on 127.0.0.8:443) and MX hosts (SMTP sinks on other loopback addresses) use certificates of
 * a test CA given through MAILCTL_MTA_STS_CA.
 */

describe('MTA-STS policy text', () => {
  test('parsePolicy reads STSv1 policies and refuses broken ones', () => {
    expect(parsePolicy('version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.example.net\r\nmax_age: 604800\r\n'))
      .toEqual({ mode: 'enforce', mx: ['mail.example.com', '*.example.net'], maxAgeSeconds: 604800 })
    expect(parsePolicy('version: STSv1\nmode: testing\nmx: MX.Example.COM.\nmax_age: 99999999999')).toBeNull()
    expect(parsePolicy('version: STSv1\nmode: testing\nmx: MX.Example.COM.\nmax_age: 40000000')).toEqual({ mode: 'testing', mx: ['mx.example.com'], maxAgeSeconds: 31_557_600 })
    expect(parsePolicy('version: STSv2\nmode: enforce\nmx: a.b\nmax_age: 1')).toBeNull()
    expect(parsePolicy('version: STSv1\nmode: enforce\nmax_age: 1')).toBeNull()
    expect(parsePolicy('version: STSv1\nmode: strict\nmx: a.b\nmax_age: 1')).toBeNull()
    expect(parsePolicy('<html>not found</html>')).toBeNull()
  })
  test('mx patterns: a wildcard stands for exactly one left-most label', () => {
    expect(mxMatches('*.example.net', 'mx1.example.net')).toBe(true)
    expect(mxMatches('*.example.net', 'a.mx1.example.net')).toBe(false)
    expect(mxMatches('*.example.net', 'example.net')).toBe(false)
    expect(mxMatches('mail.example.com', 'MAIL.example.com.')).toBe(true)
    expect(mxMatches('mail.example.com', 'mail2.example.com')).toBe(false)
  })
  test('the TXT record: exactly one v=STSv1 record with an id', () => {
    expect(stsRecordId(['v=STSv1; id=20260101T0000'])).toBe('20260101T0000')
    expect(stsRecordId(['v=spf1 -all', 'v=STSv1;id=abc;'])).toBe('abc')
    expect(stsRecordId(['v=STSv1; id=a', 'v=STSv1; id=b'])).toBeNull()
    expect(stsRecordId(['v=STSv1'])).toBeNull()
    expect(stsRecordId([])).toBeNull()
  })
})

const rnd = () => Math.random().toString(36).slice(2, 8)
const POLICY_HOST = '127.0.0.8'
const canBind443 = process.getuid?.() === 0

describe.skipIf(!canBind443)('MTA-STS in delivery', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-mta-sts-'))
  const tag = rnd()
  const good = `sts-good-${tag}.test`
  const selfSigned = `sts-self-${tag}.test`
  const elsewhere = `sts-elsewhere-${tag}.test`
  const testing = `sts-testing-${tag}.test`
  const names = [good, selfSigned, elsewhere, testing].flatMap((d) => [`mta-sts.${d}`, `mx.${d}`])
  const sh = (args: string[]) => {
    const r = Bun.spawnSync(args, { cwd: dir, stderr: 'pipe' })
    if (r.exitCode !== 0) throw new Error(`${args[0]} failed: ${r.stderr.toString()}`)
  }
  sh(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=mailctl test CA'])
  sh(['openssl', 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', `/CN=${names[0]}`])
  writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}\n`)
  sh(['openssl', 'x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '2', '-extfile', 'ext.cnf'])
  const key = readFileSync(join(dir, 'leaf.key'), 'utf8')
  const cert = readFileSync(join(dir, 'leaf.pem'), 'utf8')
  const policies: Record<string, string> = {
    [good]: `version: STSv1\nmode: enforce\nmx: mx.${good}\nmax_age: 86400\n`,
    [selfSigned]: `version: STSv1\nmode: enforce\nmx: mx.${selfSigned}\nmax_age: 86400\n`,
    [elsewhere]: `version: STSv1\nmode: enforce\nmx: mx.other-${tag}.test\nmax_age: 86400\n`,
    [testing]: `version: STSv1\nmode: testing\nmx: mx.other-${tag}.test\nmax_age: 86400\n`,
  }
  const policyServer = Bun.serve({
    hostname: POLICY_HOST, port: 443, tls: { key, cert },
    fetch(req) {
      const host = (req.headers.get('host') ?? '').replace(/^mta-sts\./, '').replace(/:\d+$/, '')
      const body = policies[host]
      if (new URL(req.url).pathname !== '/.well-known/mta-sts.txt' || !body) return new Response('not found', { status: 404 })
      return new Response(body, { headers: { 'content-type': 'text/plain; charset=utf-8' } })
    },
  })
  let dns: Awaited<ReturnType<typeof startTestDns>>
  let mxPort = 0
  const sinks: Array<Awaited<ReturnType<typeof startSink>>> = []
  beforeAll(async () => {
    dns = await startTestDns()
    const valid = await startSink({ host: '127.0.0.9', tlsCert: { key, cert } })
    mxPort = valid.port
    const self = await startSink({ host: '127.0.0.10', port: mxPort })
    sinks.push(valid, self)
    for (const d of Object.keys(policies)) {
      dns.set(`_mta-sts.${d}`, [{ type: 'TXT', data: 'v=STSv1; id=1' }])
      dns.set(`mta-sts.${d}`, [{ type: 'A', address: POLICY_HOST }])
    }
    mxTo(dns, good, '127.0.0.9', `mx.${good}`)
    mxTo(dns, selfSigned, '127.0.0.10', `mx.${selfSigned}`)
    mxTo(dns, elsewhere, '127.0.0.9', `mx.${elsewhere}`)
    mxTo(dns, testing, '127.0.0.9', `mx.${testing}`)
  })
  afterAll(async () => {
    policyServer.stop(true)
    for (const s of sinks) await s.close()
    await dns.close()
    rmSync(dir, { recursive: true, force: true })
  })

  forEachStore('MTA-STS delivery', (env) => {
    test('enforce: delivered over verified TLS; a certificate the CA did not sign or an MX outside the policy defers, never clear; testing delivers', async () => {
      env.config.dnsServers = [dns.server]
      env.config.mxPort = mxPort
      env.config.mtaStsCa = join(dir, 'ca.pem')
      const p = await projectWithDomain(env, dns, `sts-from-${rnd()}.test`)
      const send = async (to: string) => {
        const r = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to, from: p.from, subject: 'sts', body: '<p>hi</p>' } })
        expect(r.status).toBe(200)
        return r.body.data.emails[0].email as string
      }
      const ids = { good: await send(`a@${good}`), self: await send(`b@${selfSigned}`), elsewhere: await send(`c@${elsewhere}`), testing: await send(`d@${testing}`) }
      const pl = pipelineFor(env, { smtp: { connectTimeoutMs: 3000 } })
      await pl.drain()
      await pl.stop()
      const row = async (id: string) => (await env.store.db.select().from(env.store.t.emails).where(eq(env.store.t.emails.id, id)))[0]
      expect(await row(ids.good)).toMatchObject({ status: 'DELIVERED' })
      const [goodMsg] = sinks[0].received.filter((m) => m.to.includes(`a@${good}`))
      expect(goodMsg.secure).toBe(true)
      const self = await row(ids.self)
      expect(self.status).toBe('SENDING')
      expect(String(self.lastReply)).toMatch(/certificate|CERT|self.signed|issuer/i)
      expect(sinks[1].received).toHaveLength(0)
      const away = await row(ids.elsewhere)
      expect(away.status).toBe('SENDING')
      expect(String(away.lastReply)).toContain('451 4.7.5 No MX host of')
      expect(await row(ids.testing)).toMatchObject({ status: 'DELIVERED' })
      // TLS reporting counted the sessions under each policy: verified TLS, or why not.
      const counts = (await env.store.db.select().from(env.store.t.tlsReportCounts))
        .map((r) => ({ domain: r.domain, policyType: r.policyType, result: r.result }))
      expect(counts.filter((c) => c.domain === good)).toEqual([{ domain: good, policyType: 'sts', result: 'success' }])
      // smtp-server's built-in self-signed certificate has also expired, which is what OpenSSL reports first.
      expect(counts.filter((c) => c.domain === selfSigned)).toEqual([{ domain: selfSigned, policyType: 'sts', result: 'certificate-expired' }])
      expect(counts.filter((c) => c.domain === testing)).toEqual([{ domain: testing, policyType: 'sts', result: 'success' }])
    })
  }, { outbound: 'direct' })
})
