import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Config } from '../../../src/config'
import { createResolver } from '../../../src/dns'
import { verifyEmail } from '../../../src/modules/verify/service'
import { forEachStore } from '../../helpers/env'
import { nullMx, startTestDns, type TestDns } from '../../helpers/dns'

let dns: TestDns
const overrides: Partial<Config> = {}

beforeAll(async () => {
  dns = await startTestDns()
  overrides.dnsServers = [dns.server]
  // Every name gets its own records so the shared answer cache never mixes tests.
  const mx = (host: string) => ({ type: 'MX' as const, exchange: host, priority: 10 })
  dns.set('good.test', [mx('mx.good.test'), { type: 'A', address: '192.0.2.10' }])
  dns.set('nomx.test', [{ type: 'A', address: '192.0.2.11' }])
  dns.set('www.nomx.test', [{ type: 'A', address: '192.0.2.11' }])
  dns.set('nullmx.test', [nullMx(), { type: 'AAAA', address: '2001:db8::1' }])
  dns.set('mailonly.test', [mx('mx.mailonly.test')])
  dns.set('wwwonly.test', [mx('mx.wwwonly.test')])
  dns.set('www.wwwonly.test', [{ type: 'CNAME', target: 'web.host.test' }])
  dns.set('web.host.test', [{ type: 'AAAA', address: '2001:db8::2' }])
  dns.set('xn--mnchen-3ya.test', [mx('mx.muenchen.test'), { type: 'A', address: '192.0.2.12' }])
  dns.set('cached.test', [mx('mx.cached.test'), { type: 'A', address: '192.0.2.13' }])
  dns.set('gmail.com', [mx('gmail-smtp-in.l.google.com'), { type: 'A', address: '192.0.2.20' }])
  dns.set('gmial.com', [{ type: 'A', address: '192.0.2.21' }])
  dns.set('mailinator.com', [mx('mail.mailinator.com'), { type: 'A', address: '192.0.2.22' }])
  dns.set('privaterelay.appleid.com', [mx('mx01.mail.icloud.com')])
  dns.fail('broken.test', 'SERVFAIL')
})
afterAll(() => dns.close())

forEachStore('POST /v1/verify', (env) => {
  let sk = ''
  let pk = ''
  beforeAll(async () => {
    const p = await env.project()
    sk = p.secretKey
    pk = p.publicKey
  })
  const verify = async (email: string) => {
    const res = await env.request('POST', '/v1/verify', { key: sk, body: { email } })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    return res.body.data
  }

  test('a valid address: MX, website, nothing to report', async () => {
    const r = await verify('  Jane.Doe@Good.TEST ')
    expect(r).toEqual({
      email: 'jane.doe@good.test', valid: true, isDisposable: false, isAlias: false, isTypo: false,
      isPlusAddressed: false, isPersonalEmail: false, domainExists: true, hasWebsite: true, hasMxRecords: true,
      reasons: ['Email appears to be valid'],
    })
  })

  test('no MX records: invalid, with a reason, the domain exists and has a website', async () => {
    const r = await verify('someone@nomx.test')
    expect(r.valid).toBe(false)
    expect(r.domainExists).toBe(true)
    expect(r.hasMxRecords).toBe(false)
    expect(r.hasWebsite).toBe(true)
    expect(r.reasons).toEqual(['No MX records: nomx.test cannot receive email'])
  })

  test('null MX (RFC 7505): hasMxRecords false with its own reason', async () => {
    const r = await verify('someone@nullmx.test')
    expect(r.valid).toBe(false)
    expect(r.domainExists).toBe(true)
    expect(r.hasMxRecords).toBe(false)
    expect(r.hasWebsite).toBe(true)
    expect(r.reasons).toEqual(['No MX records: nullmx.test publishes a null MX (RFC 7505), it accepts no mail'])
  })

  test('NXDOMAIN: the domain does not exist, one reason covers MX and website', async () => {
    const r = await verify('someone@missing-domain.test')
    expect(r).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false })
    expect(r.reasons).toEqual(['Domain does not exist: missing-domain.test has no DNS records (NXDOMAIN), so no MX records and no website'])
  })

  test('a temporary DNS failure says so and is not valid', async () => {
    const r = await verify('someone@broken.test')
    expect(r).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false })
    expect(r.reasons[0]).toContain('could not be checked')
    expect(r.reasons[0]).toContain('SERVFAIL')
  })

  test('hasWebsite: no A/AAAA anywhere is false with a reason; www. via CNAME to AAAA is true', async () => {
    const a = await verify('x@mailonly.test')
    expect(a).toMatchObject({ valid: true, hasWebsite: false })
    expect(a.reasons).toEqual(['No website: neither mailonly.test nor www.mailonly.test has an A or AAAA record'])
    const b = await verify('x@wwwonly.test')
    expect(b).toMatchObject({ valid: true, hasWebsite: true, reasons: ['Email appears to be valid'] })
  })

  test('disposable domain (mailchecker list)', async () => {
    const r = await verify('throwaway@mailinator.com')
    expect(r).toMatchObject({ valid: true, isDisposable: true, isPersonalEmail: false, hasMxRecords: true })
    expect(r.reasons).toEqual(['Disposable: mailinator.com is a known throwaway email provider'])
  })

  test('typo of a popular provider: isTypo with suggestedEmail', async () => {
    const r = await verify('jane@gmial.com')
    expect(r.isTypo).toBe(true)
    expect(r.suggestedEmail).toBe('jane@gmail.com')
    expect(r.isPersonalEmail).toBe(false)
    expect(r.hasMxRecords).toBe(false)
    expect(r.valid).toBe(false)
    expect(r.reasons).toContain('Possible typo: did you mean jane@gmail.com?')
  })

  test('plus addressing on a personal provider', async () => {
    const r = await verify('jane+news@gmail.com')
    expect(r).toMatchObject({ valid: true, isPlusAddressed: true, isPersonalEmail: true, isTypo: false, isAlias: false, isDisposable: false })
    expect(r.suggestedEmail).toBeUndefined()
    expect(r.reasons).toEqual(['Plus addressing: mail goes to the mailbox jane@gmail.com with the tag "news"'])
  })

  test('aliases: a forwarding service and a role address', async () => {
    const relay = await verify('abc123@privaterelay.appleid.com')
    expect(relay).toMatchObject({ isAlias: true, isDisposable: false, valid: true })
    expect(relay.reasons[0]).toContain('forwarding service')
    const role = await verify('support+x@good.test')
    expect(role).toMatchObject({ isAlias: true, isPlusAddressed: true, valid: true })
    expect(role.reasons).toContain('Alias: "support" is a role address that usually reaches a team, not one person')
  })

  test('IDN domain via punycode', async () => {
    const r = await verify('Anna@München.TEST')
    expect(r).toMatchObject({ email: 'anna@münchen.test', valid: true, domainExists: true, hasMxRecords: true, hasWebsite: true })
  })

  test('bad syntax: 422 VALIDATION_ERROR naming the reason, and no DNS look-up', async () => {
    const before = dns.queries.length
    for (const [email, reason] of [
      ['no-at-sign', 'the address has no @'],
      ['a..b@good.test', 'leading, trailing or doubled dot'],
      ['a@good', 'no top-level domain'],
      ['a@[192.0.2.1]', 'address literals'],
      ['"quoted"@good.test', 'quoted local parts'],
      ['a@-bad-.test', 'not allowed in a host name'],
      [`${'x'.repeat(65)}@good.test`, 'longer than 64'],
    ] as const) {
      const res = await env.request('POST', '/v1/verify', { key: sk, body: { email } })
      expect([email, res.status]).toEqual([email, 422])
      expect(res.body.error.code).toBe('VALIDATION_ERROR')
      expect(res.body.error.errors[0]).toMatchObject({ field: 'email', code: 'invalid_string', received: email })
      expect(res.body.error.message).toContain('Invalid email syntax:')
      expect(res.body.error.message).toContain(reason)
    }
    expect(dns.queries.length).toBe(before)
  })

  test('a missing dot in a popular domain is refused with the suggestion', async () => {
    const res = await env.request('POST', '/v1/verify', { key: sk, body: { email: 'jane@gmailcom' } })
    expect(res.status).toBe(422)
    expect(res.body.error.suggestion).toBe('Did you mean jane@gmail.com?')
    expect(res.body.error.details).toEqual({ suggestedEmail: 'jane@gmail.com' })
  })

  test('422 on a bad body: missing, empty, not a string, too long', async () => {
    for (const body of [{}, { email: '' }, { email: 42 }, { email: 'a'.repeat(321) }]) {
      const res = await env.request('POST', '/v1/verify', { key: sk, body })
      expect(res.status).toBe(422)
      expect(res.body.error.code).toBe('VALIDATION_ERROR')
      expect(res.body.error.errors[0].field).toBe('email')
    }
    const raw = await env.request('POST', '/v1/verify', { key: sk, raw: '{not json', headers: { 'content-type': 'application/json' } })
    expect(raw.status).toBe(400)
  })

  test('security: no key 401, public key 401 INVALID_API_KEY, unknown key 401', async () => {
    const none = await env.request('POST', '/v1/verify', { body: { email: 'a@good.test' } })
    expect(none.status).toBe(401)
    const pub = await env.request('POST', '/v1/verify', { key: pk, body: { email: 'a@good.test' } })
    expect(pub.status).toBe(401)
    expect(pub.body.error.code).toBe('INVALID_API_KEY')
    const bad = await env.request('POST', '/v1/verify', { key: `sk_${'0'.repeat(64)}`, body: { email: 'a@good.test' } })
    expect(bad.status).toBe(401)
    expect(bad.body.error.code).toBe('INVALID_API_KEY')
  })

  test('DNS answers are cached: a second verify asks nothing, even after the zone changed', async () => {
    await verify('one@cached.test')
    const asked = dns.queries.filter((q) => q.name === 'cached.test').length
    expect(asked).toBeGreaterThanOrEqual(3) // MX, A, AAAA
    dns.remove('cached.test', 'MX')
    const again = await verify('two@cached.test')
    expect(again.hasMxRecords).toBe(true)
    expect(dns.queries.filter((q) => q.name === 'cached.test').length).toBe(asked)
  })

  test('no mail is sent by a verification', async () => {
    const captured = await env.store.rows<{ n: number | string }>(
      (await import('drizzle-orm')).sql`SELECT COUNT(*) AS n FROM mail_capture`,
    )
    expect(Number(captured[0].n)).toBe(0)
  })
}, overrides)

describe('verifyEmail without the cache', () => {
  test('a fresh resolver sees a zone change at once', async () => {
    const r = createResolver({ servers: [dns.server], timeoutMs: 500, attempts: 1 })
    dns.set('fresh.test', [{ type: 'MX', exchange: 'mx.fresh.test', priority: 5 }])
    const deps = { config: { dnsServers: [dns.server] } }
    expect((await verifyEmail({ deps }, 'a@fresh.test', r)).hasMxRecords).toBe(true)
    dns.set('fresh.test', [nullMx()])
    const again = await verifyEmail({ deps }, 'a@fresh.test', createResolver({ servers: [dns.server], timeoutMs: 500, attempts: 1 }))
    expect(again.hasMxRecords).toBe(false)
  })
})
