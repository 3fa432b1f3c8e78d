import { afterAll, beforeEach, expect, test } from 'bun:test'
import { createPublicKey, createSign, createVerify, generateKeyPairSync } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { asc, eq } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { splitTxt, startTestDns } from '../../helpers/dns'
import { ctxFor } from '../../../src/deps'
import { Worker, enqueue } from '../../../src/jobs/queue'
import { domainJobs } from '../../../src/modules/domains/jobs'
import { assertSenderAllowed } from '../../../src/modules/domains/service'
import { decryptPrivateKey, masterKey } from '../../../src/modules/domains/keys'
import type { DomainOut } from '../../../src/modules/domains/model'
import { createLogger, type Logger } from '../../../src/log'
import { must } from '../../helpers/must'

const dns = await startTestDns()
afterAll(() => dns.close())

const HOST = 'mx.mailctl.test'
let counter = 0
const uniqueDomain = (base = 'example') => `${base}-${Date.now().toString(36)}-${++counter}.com`

type Rec = DomainOut['records'][number]
const rec = (d: DomainOut, purpose: Rec['purpose']) => must(d.records.find((r) => r.purpose === purpose), `a ${purpose} record`)

/** Publishes the records of `d` on the loopback DNS server: DKIM as several strings, as DNS hosts do. */
function publish(d: DomainOut, parts: { dkim?: boolean; returnPath?: boolean; dmarc?: boolean } = {}) {
  const { dkim = true, returnPath = true, dmarc = true } = parts
  const k = rec(d, 'DKIM')
  if (dkim) dns.set(k.name, [{ type: 'TXT', data: splitTxt(k.value) }])
  if (returnPath) {
    dns.set(`bounce.${d.domain}`, [
      { type: 'MX', exchange: HOST, priority: 10 },
      { type: 'TXT', data: rec(d, 'RETURN_PATH_SPF').value },
    ])
  }
  if (dmarc) dns.set(`_dmarc.${d.domain}`, [{ type: 'TXT', data: 'v=DMARC1; p=none; rua=mailto:d@example.com' }])
}

forEachStore('domains', (env: TestEnv) => {
  let p: Awaited<ReturnType<TestEnv['project']>>
  beforeEach(async () => { p = await env.project() })

  const add = async (domain: string, key = p.secretKey, projectId = p.id) =>
    env.request('POST', '/domains', { key, body: { projectId, domain } })
  const verify = (id: string, key = p.secretKey) => env.request<DomainOut>('GET', `/domains/${id}/verify`, { key })

  test('POST /domains returns the domain with the records to publish', async () => {
    const name = uniqueDomain()
    const res = await add(name)
    expect(res.status).toBe(201)
    const d = res.body
    expect(d).toMatchObject({ projectId: p.id, domain: name, verified: false, lastCheckedAt: null })
    expect(typeof d.id).toBe('string')
    expect(new Date(d.createdAt as unknown as string).getTime()).toBeGreaterThan(0)
    const dkim = rec(d, 'DKIM')
    expect(dkim).toMatchObject({ type: 'TXT', required: true, status: 'pending', reason: null })
    expect(dkim.name).toMatch(new RegExp(`^mailctl\\d{6}-[0-9a-f]{6}\\._domainkey\\.${name.replace(/\./g, '\\.')}$`))
    const p64 = must(/^v=DKIM1; k=rsa; p=([A-Za-z0-9+/=]+)$/.exec(dkim.value), 'a DKIM record value')[1]
    const pub = createPublicKey({ key: Buffer.from(p64, 'base64'), format: 'der', type: 'spki' })
    expect(pub.asymmetricKeyType).toBe('rsa')
    expect(pub.asymmetricKeyDetails?.modulusLength).toBe(2048)
    expect(dkim.value.length).toBeGreaterThan(255) // needs several TXT strings
    expect(rec(d, 'RETURN_PATH_MX')).toEqual({ purpose: 'RETURN_PATH_MX', type: 'MX', name: `bounce.${name}`, value: HOST, priority: 10, required: false, status: 'pending', reason: null })
    expect(rec(d, 'RETURN_PATH_SPF')).toMatchObject({ type: 'TXT', name: `bounce.${name}`, value: `v=spf1 a:${HOST} ~all`, required: false })
    expect(rec(d, 'DMARC')).toMatchObject({ type: 'TXT', name: `_dmarc.${name}`, value: 'v=DMARC1; p=none;', required: false })
  })

  test('the private key is encrypted at rest and appears in no response nor log line', async () => {
    const lines: string[] = []
    const capture: Logger = createLogger('debug')
    const original = env.deps.log
    const record = (msg: string, f?: Record<string, unknown>) => { lines.push(JSON.stringify({ msg, ...f })) }
    env.deps.log = { ...capture, debug: record, info: record, warn: record, error: record, child: () => env.deps.log }
    try {
      const name = uniqueDomain()
      const created = await add(name)
      publish(created.body)
      const verified = await verify(created.body.id)
      expect(verified.body.verified).toBe(true)
      const listed = await env.request('GET', `/domains/project/${p.id}`, { key: p.secretKey })
      const { domains } = env.store.t
      const [row] = await env.store.db.select().from(domains).where(eq(domains.id, created.body.id))
      expect(row.dkimPrivateKey).toStartWith('v1:')
      expect(row.dkimPrivateKey).not.toContain('PRIVATE KEY')
      const pem = decryptPrivateKey(masterKey(env.config.dataDir), row.dkimPrivateKey, row.id)
      expect(pem).toContain('BEGIN PRIVATE KEY')
      // bound to its row: the same ciphertext does not open under another id
      expect(() => decryptPrivateKey(masterKey(env.config.dataDir), row.dkimPrivateKey, 'another-id')).toThrow()
      const body = pem.split('\n').filter((l) => l && !l.startsWith('-----'))
      for (const text of [created.text, verified.text, listed.text, lines.join('\n')]) {
        expect(text).not.toContain('PRIVATE KEY')
        for (const chunk of body) expect(text).not.toContain(chunk)
      }
      expect(lines.some((l) => l.includes('domain verified'))).toBe(true)
      const file = join(env.config.dataDir, 'dkim.key')
      expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64').length).toBe(32)
      expect(statSync(file).mode & 0o077).toBe(0)
    } finally {
      env.deps.log = original
    }
  })

  test('names are normalised (IDNA, case, trailing dot)', async () => {
    const res = await add('B\u00fccher.Example.')
    expect(res.status).toBe(201)
    expect(res.body.domain).toBe('xn--bcher-kva.example')
    expect(rec(res.body, 'DKIM').name).toEndWith('._domainkey.xn--bcher-kva.example')
    const again = await add('xn--bcher-kva.EXAMPLE')
    expect(again.status).toBe(409)
  })

  test('invalid names and IP addresses answer 422 VALIDATION_ERROR', async () => {
    for (const bad of ['192.0.2.1', '[2001:db8::1]', '2001:db8::1', '0x7f.1', '10.1', 'localhost', 'com', 'exa mple.com', 'http://example.com', 'user@example.com', '-bad.com', 'bad-.com', 'a..com', 'under_score.com', `${'x'.repeat(64)}.com`, 'mail.local']) {
      const res = await add(bad)
      expect({ bad, status: res.status, code: res.body.error?.code }).toEqual({ bad, status: 422, code: 'VALIDATION_ERROR' })
      expect(res.body.error.errors[0].field).toBe('domain')
    }
    const missing = await env.request('POST', '/domains', { key: p.secretKey, body: { projectId: p.id } })
    expect(missing.status).toBe(422)
    expect(missing.body.error.code).toBe('VALIDATION_ERROR')
    const empty = await add('')
    expect(empty.status).toBe(422)
  })

  test('duplicates: 409 in the same project; a domain verified elsewhere cannot be claimed', async () => {
    const name = uniqueDomain()
    expect((await add(name)).status).toBe(201)
    const dup = await add(name.toUpperCase())
    expect(dup.status).toBe(409)
    expect(dup.body.error.code).toBe('CONFLICT')

    // another project may add it while it is pending ...
    const other = await env.project()
    const pendingElsewhere = await add(name, other.secretKey, other.id)
    expect(pendingElsewhere.status).toBe(201)
    // ... but once one project verified it, nobody else can claim or verify it
    const mine = (await env.request<DomainOut[]>('GET', `/domains/project/${p.id}`, { key: p.secretKey })).body[0]
    publish(mine)
    expect((await verify(mine.id)).body.verified).toBe(true)
    const third = await env.project()
    const claim = await add(name, third.secretKey, third.id)
    expect(claim.status).toBe(409)
    expect(claim.body.error.message).toMatch(/another project/)
    publish(pendingElsewhere.body, { returnPath: false, dmarc: false })
    const theirs = await verify(pendingElsewhere.body.id, other.secretKey)
    expect(theirs.status).toBe(200)
    expect(theirs.body.verified).toBe(false)
    expect(rec(theirs.body, 'DKIM')).toMatchObject({ status: 'failed', reason: expect.stringMatching(/verified by another project/) })
  })

  test('verification: missing records say so; verified only when the DKIM key matches exactly', async () => {
    const created = (await add(uniqueDomain())).body
    const k = rec(created, 'DKIM')

    let d = (await verify(created.id)).body
    expect(d.verified).toBe(false)
    expect(d.lastCheckedAt).not.toBeNull()
    expect(rec(d, 'DKIM')).toMatchObject({ status: 'failed', reason: expect.stringContaining(`missing: no TXT record at ${k.name}`) })
    expect(rec(d, 'RETURN_PATH_MX')).toMatchObject({ status: 'failed', reason: expect.stringContaining('missing') })
    expect(rec(d, 'RETURN_PATH_SPF')).toMatchObject({ status: 'failed', reason: expect.stringContaining('missing') })
    expect(rec(d, 'DMARC')).toMatchObject({ status: 'failed', reason: expect.stringContaining('missing') })

    // another key
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
    dns.set(k.name, [{ type: 'TXT', data: splitTxt(`v=DKIM1; k=rsa; p=${otherKey}`) }])
    d = (await verify(created.id)).body
    expect(d.verified).toBe(false)
    expect(rec(d, 'DKIM')).toMatchObject({ status: 'failed', reason: expect.stringContaining('found a different key') })

    // the right key cut short (a common copy-paste mistake with long TXT values)
    dns.set(k.name, [{ type: 'TXT', data: splitTxt(k.value.slice(0, 255)) }])
    d = (await verify(created.id)).body
    expect(rec(d, 'DKIM')).toMatchObject({ status: 'failed', reason: expect.stringContaining('truncated') })

    // one character off
    const last = k.value.at(-2) === 'A' ? 'B' : 'A'
    dns.set(k.name, [{ type: 'TXT', data: splitTxt(k.value.slice(0, -2) + last + k.value.at(-1)) }])
    expect((await verify(created.id)).body.verified).toBe(false)

    // not a DKIM record at all
    dns.set(k.name, [{ type: 'TXT', data: 'google-site-verification=abc' }])
    d = (await verify(created.id)).body
    expect(rec(d, 'DKIM')).toMatchObject({ status: 'failed', reason: expect.stringContaining('"google-site-verification=abc"') })

    // wrong return path
    dns.set(`bounce.${created.domain}`, [{ type: 'MX', exchange: 'mx.elsewhere.example', priority: 10 }, { type: 'TXT', data: 'v=spf1 include:_spf.elsewhere.example -all' }])
    d = (await verify(created.id)).body
    expect(rec(d, 'RETURN_PATH_MX').reason).toContain('found MX 10 mx.elsewhere.example')
    expect(rec(d, 'RETURN_PATH_SPF').reason).toContain(`does not authorise ${HOST}`)

    // exact key, published as two strings (a 2048-bit key does not fit one): verified
    expect(splitTxt(k.value).length).toBeGreaterThanOrEqual(2)
    publish(created)
    d = (await verify(created.id)).body
    expect(d.verified).toBe(true)
    for (const r of d.records) expect({ purpose: r.purpose, status: r.status, reason: r.reason }).toEqual({ purpose: r.purpose, status: 'verified', reason: null })

    // the listing shows the stored outcome
    const list = (await env.request<DomainOut[]>('GET', `/domains/project/${p.id}`, { key: p.secretKey })).body
    expect(list.find((x) => x.id === created.id)).toEqual(d)
  })

  test('a DKIM key split into three strings, with whitespace inside p=, verifies; DMARC is not required', async () => {
    const created = (await add(uniqueDomain())).body
    const k = rec(created, 'DKIM')
    const key = k.value.slice(k.value.indexOf('p=') + 2)
    dns.set(k.name, [{ type: 'TXT', data: [`v=DKIM1; k=rsa; p=${key.slice(0, 150)} `, key.slice(150, 300), ` ${key.slice(300)}`] }, { type: 'TXT', data: 'unrelated=1' }])
    const d = (await verify(created.id)).body
    expect(d.verified).toBe(true)
    expect(rec(d, 'DMARC').status).toBe('failed')
    expect(rec(d, 'RETURN_PATH_MX').status).toBe('failed')
    // the sender gate now lets the domain send; the return path falls back to our host
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const signing = await assertSenderAllowed(ctx, `news@${created.domain}`)
    expect(signing).toMatchObject({ domainId: created.id, domain: created.domain, selector: k.name.split('.')[0], returnPathDomain: HOST, returnPathVerified: false })
    // the decrypted private key matches the published public key
    const sig = createSign('sha256').update('hello').sign(signing.privateKeyPem)
    const pub = createPublicKey({ key: Buffer.from(key, 'base64'), format: 'der', type: 'spki' })
    expect(createVerify('sha256').update('hello').verify(pub, sig)).toBe(true)
  })

  test('DMARC inherited from the parent domain counts; return path verified sets the bounce domain', async () => {
    const parent = uniqueDomain('parent')
    const created = (await add(`mail.${parent}`)).body
    publish(created, { dmarc: false })
    dns.set(`_dmarc.${parent}`, [{ type: 'TXT', data: 'v=DMARC1; p=reject' }])
    const d = (await verify(created.id)).body
    expect(rec(d, 'DMARC')).toMatchObject({ status: 'verified', reason: `inherited from _dmarc.${parent}` })
    const signing = await assertSenderAllowed(ctxFor(env.deps, p.id, { kind: 'cli' }), `a@mail.${parent}`)
    expect(signing).toMatchObject({ returnPathDomain: `bounce.mail.${parent}`, returnPathVerified: true })
  })

  test('PATCH /domains/:id allowSubdomains: off by default; on, a subdomain sender passes and is signed by the domain', async () => {
    const created = (await add(uniqueDomain())).body
    expect(created.allowSubdomains).toBe(false)
    publish(created, { dkim: true })
    expect((await verify(created.id)).body.verified).toBe(true)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const sub = `boss@payroll.${created.domain}`
    await expect(assertSenderAllowed(ctx, sub)).rejects.toThrow(/not verified/)
    const on = await env.request('PATCH', `/domains/${created.id}`, { key: p.secretKey, body: { allowSubdomains: true } })
    expect(on.status).toBe(200)
    expect(on.body).toMatchObject({ id: created.id, allowSubdomains: true, verified: true })
    expect((await assertSenderAllowed(ctx, sub)).domain).toBe(created.domain)
    const off = await env.request('PATCH', `/domains/${created.id}`, { key: p.secretKey, body: { allowSubdomains: false } })
    expect(off.body.allowSubdomains).toBe(false)
    await expect(assertSenderAllowed(ctx, sub)).rejects.toThrow(/not verified/)
    // errors and security
    expect((await env.request('PATCH', `/domains/${created.id}`, { key: p.secretKey, body: {} })).status).toBe(422)
    expect((await env.request('PATCH', `/domains/${created.id}`, { key: p.secretKey, body: { allowSubdomains: 'yes' } })).status).toBe(422)
    expect((await env.request('PATCH', `/domains/${created.id}`, { body: { allowSubdomains: true } })).status).toBe(401)
    expect((await env.request('PATCH', `/domains/${created.id}`, { key: p.publicKey, body: { allowSubdomains: true } })).status).toBe(401)
    const q = await env.project()
    const foreign = await env.request('PATCH', `/domains/${created.id}`, { key: q.secretKey, body: { allowSubdomains: true } })
    expect(foreign.status).toBe(404)
    expect((await verify(created.id)).body.allowSubdomains).toBe(false)
    // chosen at creation too
    const born = (await env.request('POST', '/domains', { key: p.secretKey, body: { projectId: p.id, domain: uniqueDomain(), allowSubdomains: true } })).body
    expect(born.allowSubdomains).toBe(true)
  })

  test('a temporary DNS failure does not unverify a domain', async () => {
    const created = (await add(uniqueDomain())).body
    publish(created)
    expect((await verify(created.id)).body.verified).toBe(true)
    const k = rec(created, 'DKIM')
    dns.fail(k.name, 'SERVFAIL')
    try {
      const d = (await verify(created.id)).body
      expect(d.verified).toBe(true)
      expect(rec(d, 'DKIM')).toMatchObject({ status: 'verified', reason: expect.stringContaining("failed temporarily (SERVFAIL): the domain's DNS servers gave no answer") })
    } finally { dns.fail(k.name, null) }
  })

  test('DELETE /domains/:id removes it; the sender gate refuses it at once', async () => {
    const created = (await add(uniqueDomain())).body
    publish(created)
    expect((await verify(created.id)).body.verified).toBe(true)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await assertSenderAllowed(ctx, `a@${created.domain}`)
    const del = await env.request('DELETE', `/domains/${created.id}`, { key: p.secretKey })
    expect(del.status).toBe(204)
    expect(del.text).toBe('')
    const err = await assertSenderAllowed(ctx, `a@${created.domain}`).then(() => null, (e) => e)
    expect(err?.status).toBe(403)
    expect(err?.code).toBe('INTERNAL_SERVER_ERROR')
    expect((await env.request('DELETE', `/domains/${created.id}`, { key: p.secretKey })).status).toBe(404)
    expect((await verify(created.id)).status).toBe(404)
    const list = (await env.request<DomainOut[]>('GET', `/domains/project/${p.id}`, { key: p.secretKey })).body
    expect(list.map((x) => x.id)).not.toContain(created.id)
  })

  test('security: no key 401, public key 401 INVALID_API_KEY, another project 404', async () => {
    const created = (await add(uniqueDomain())).body
    const other = await env.project()
    const calls: Array<[string, string, unknown?]> = [
      ['GET', `/domains/project/${p.id}`],
      ['POST', '/domains', { projectId: p.id, domain: uniqueDomain() }],
      ['GET', `/domains/${created.id}/verify`],
      ['DELETE', `/domains/${created.id}`],
    ]
    for (const [method, path, body] of calls) {
      const none = await env.request(method, path, { body })
      expect({ path, status: none.status, code: none.body.error.code }).toEqual({ path, status: 401, code: 'UNAUTHORIZED' })
      const pub = await env.request(method, path, { key: p.publicKey, body })
      expect({ path, status: pub.status, code: pub.body.error.code }).toEqual({ path, status: 401, code: 'INVALID_API_KEY' })
    }
    // the other project's key cannot see, verify, delete or list this project's domain
    expect((await verify(created.id, other.secretKey)).status).toBe(404)
    const del = await env.request('DELETE', `/domains/${created.id}`, { key: other.secretKey })
    expect(del.status).toBe(404)
    expect(del.body.error.code).toBe('NOT_FOUND')
    const list = await env.request('GET', `/domains/project/${p.id}`, { key: other.secretKey })
    expect(list.status).toBe(404)
    const post = await add(uniqueDomain(), other.secretKey, p.id)
    expect(post.status).toBe(404)
    expect((await env.request<DomainOut[]>('GET', `/domains/project/${other.id}`, { key: other.secretKey })).body).toEqual([])
    // still there for its owner
    expect((await verify(created.id)).status).toBe(200)
    expect((await env.request('GET', '/domains/not-an-id/verify', { key: p.secretKey })).status).toBe(404)
  })

  test('the recheck job verifies pending domains and flips a verified one back when its DKIM record disappears', async () => {
    const worker = new Worker(env.deps, domainJobs)
    const { domains, events, jobs } = env.store.t
    const runJob = async () => {
      await env.store.tx((db) => db.delete(jobs).where(eq(jobs.name, 'domains.recheck')))
      await enqueue(env.store, 'domains.recheck', {}, { wake: null, now: new Date(), uniqueKey: 'domains.recheck' })
      await worker.drain()
    }
    const created = (await add(uniqueDomain())).body
    publish(created)
    await runJob() // never checked: due at once
    const [row1] = await env.store.db.select().from(domains).where(eq(domains.id, created.id))
    expect(row1.verified).toBe(true)

    // the record disappears; nothing happens until a verified domain is a day old ...
    dns.remove(rec(created, 'DKIM').name)
    await runJob()
    expect((await env.store.db.select().from(domains).where(eq(domains.id, created.id)))[0].verified).toBe(true)
    // ... then the daily check flips it to pending and tells the project
    await env.store.tx((db) => db.update(domains).set({ lastCheckedAt: new Date(Date.now() - 25 * 3600_000) }).where(eq(domains.id, created.id)))
    await runJob()
    const [row2] = await env.store.db.select().from(domains).where(eq(domains.id, created.id))
    expect(row2.verified).toBe(false)
    expect(row2.checks.DKIM.status).toBe('failed')
    const evs = await env.store.db.select().from(events).where(eq(events.projectId, p.id)).orderBy(asc(events.createdAt), asc(events.id))
    expect(evs.map((e) => e.name)).toEqual(['domain.verified', 'domain.unverified'])
    expect(evs[1]).toMatchObject({ contactId: null, data: { domainId: created.id, domain: created.domain, reason: expect.stringContaining('missing') } })
    const err = await assertSenderAllowed(ctxFor(env.deps, p.id, { kind: 'cli' }), `a@${created.domain}`).then(() => null, (e) => e)
    expect(err?.status).toBe(403)

    // pending ones are re-checked after 5 minutes, not before
    publish(created)
    await runJob()
    expect((await env.store.db.select().from(domains).where(eq(domains.id, created.id)))[0].verified).toBe(false)
    await env.store.tx((db) => db.update(domains).set({ lastCheckedAt: new Date(Date.now() - 6 * 60_000) }).where(eq(domains.id, created.id)))
    await runJob()
    expect((await env.store.db.select().from(domains).where(eq(domains.id, created.id)))[0].verified).toBe(true)
  })
}, { dnsServers: [dns.server] })
