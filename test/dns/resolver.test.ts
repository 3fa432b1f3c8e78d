import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { createResolver, DnsError, isNotFound, parseServer, resolveMx, resolveTxt, resolverFor, type Resolver } from '../../src/dns'
import { nullMx, splitTxt, startTestDns, type TestDns } from '../helpers/dns'

let dns: TestDns
let r: Resolver

beforeAll(async () => {
  dns = await startTestDns()
  r = createResolver({ servers: [dns.server], timeoutMs: 300, attempts: 1 })
})
afterAll(() => dns.close())
beforeEach(() => { dns.clear(); dns.udpLimit = 512 })

async function failure(p: Promise<unknown>): Promise<DnsError> {
  const err = await p.then(() => null, (e) => e)
  expect(err).toBeInstanceOf(DnsError)
  return err as DnsError
}

describe('MX', () => {
  test('sorted by preference, then name', async () => {
    dns.set('example.com', [
      { type: 'MX', exchange: 'mx3.example.com', priority: 30 },
      { type: 'MX', exchange: 'MX1.example.com', priority: 10 },
      { type: 'MX', exchange: 'b.example.com', priority: 20 },
      { type: 'MX', exchange: 'a.example.com', priority: 20 },
    ])
    expect(await r.resolveMx('Example.COM.')).toEqual({
      nullMx: false,
      records: [
        { exchange: 'mx1.example.com', priority: 10 },
        { exchange: 'a.example.com', priority: 20 },
        { exchange: 'b.example.com', priority: 20 },
        { exchange: 'mx3.example.com', priority: 30 },
      ],
    })
  })

  test('null MX (RFC 7505) is detected', async () => {
    dns.set('nomail.example', [nullMx()])
    expect(await r.resolveMx('nomail.example')).toEqual({ records: [], nullMx: true })
  })

  test('NXDOMAIN and NODATA are definitive, not temporary', async () => {
    dns.set('a-only.example', [{ type: 'A', address: '192.0.2.1' }])
    const nx = await failure(r.resolveMx('missing.example'))
    expect(nx.code).toBe('NXDOMAIN')
    expect(nx.notFound).toBe(true)
    expect(nx.temporary).toBe(false)
    const nodata = await failure(r.resolveMx('a-only.example'))
    expect(nodata.code).toBe('NODATA')
    expect(isNotFound(nodata)).toBe(true)
  })
})

describe('TXT', () => {
  test('a record made of several strings comes back as one joined string', async () => {
    const value = `v=DKIM1; k=rsa; p=${'A'.repeat(392)}`
    dns.set('sel._domainkey.example.com', [{ type: 'TXT', data: splitTxt(value) }, { type: 'TXT', data: 'second record' }])
    const got = await r.resolveTxt('sel._domainkey.example.com')
    expect(got.sort()).toEqual([value, 'second record'].sort())
    const strings = await r.resolveTxtStrings('sel._domainkey.example.com')
    expect(strings.find((s) => s.length > 1)).toEqual(splitTxt(value))
  })

  test('a truncated UDP answer is retried over TCP', async () => {
    const value = `v=spf1 ${'include:_spf.example.net '.repeat(40)}-all`
    dns.set('big.example', [{ type: 'TXT', data: splitTxt(value, 200) }])
    expect(await r.resolveTxt('big.example')).toEqual([value])
    expect(dns.queries.map((q) => q.transport)).toEqual(['udp', 'tcp'])
  })

  test('UTF-8 split across strings is joined before decoding', async () => {
    const bytes = Buffer.from('caf\u00e9 \u00fcber', 'utf8')
    // the first string ends in the middle of the two bytes of "\u00e9"
    dns.set('utf.example', [{ type: 'TXT', data: [bytes.subarray(0, 4), bytes.subarray(4)] }])
    expect(await r.resolveTxt('utf.example')).toEqual(['caf\u00e9 \u00fcber'])
  })

  test('CNAME chains are followed', async () => {
    dns.set('alias.example', [{ type: 'CNAME', target: 'real.example' }])
    dns.set('real.example', [{ type: 'TXT', data: 'hello' }])
    expect(await r.resolveTxt('alias.example')).toEqual(['hello'])
  })
})

describe('A and AAAA', () => {
  test('addresses', async () => {
    dns.set('host.example', [
      { type: 'A', address: '192.0.2.10' }, { type: 'A', address: '192.0.2.11' },
      { type: 'AAAA', address: '2001:db8::1' },
    ])
    expect((await r.resolveA('host.example')).sort()).toEqual(['192.0.2.10', '192.0.2.11'])
    expect(await r.resolveAAAA('host.example')).toEqual(['2001:db8::1'])
  })

  test('internationalised names are queried in ASCII', async () => {
    dns.set('xn--bcher-kva.example', [{ type: 'A', address: '192.0.2.7' }])
    expect(await r.resolveA('b\u00fccher.example')).toEqual(['192.0.2.7'])
  })
})

describe('failures', () => {
  test('SERVFAIL and REFUSED are temporary', async () => {
    dns.fail('broken.example', 'SERVFAIL')
    const e = await failure(r.resolveTxt('broken.example'))
    expect(e.code).toBe('SERVFAIL')
    expect(e.temporary).toBe(true)
    dns.fail('closed.example', 'REFUSED')
    expect((await failure(r.resolveTxt('closed.example'))).code).toBe('REFUSED')
  })

  test('a server that never answers times out (temporary)', async () => {
    dns.fail('slow.example', 'TIMEOUT')
    const e = await failure(r.resolveA('slow.example'))
    expect(e.code).toBe('TIMEOUT')
    expect(e.temporary).toBe(true)
  })

  test('the next server is tried after a failing one', async () => {
    const dead = await startTestDns()
    dead.fail('example.org', 'SERVFAIL')
    try {
      dns.set('example.org', [{ type: 'A', address: '192.0.2.5' }])
      const two = createResolver({ servers: [dead.server, dns.server], timeoutMs: 300, attempts: 1 })
      expect(await two.resolveA('example.org')).toEqual(['192.0.2.5'])
    } finally { await dead.close() }
  })

  test('invalid names are refused without a query', async () => {
    const e = await failure(r.resolveA('a..b'))
    expect(e.code).toBe('BADNAME')
    expect(e.temporary).toBe(false)
    expect(dns.queries).toEqual([])
  })
})

describe('configuration', () => {
  test('server specs', () => {
    expect(parseServer('10.0.0.1')).toMatchObject({ host: '10.0.0.1', port: 53, family: 4 })
    expect(parseServer('127.0.0.1:5353')).toMatchObject({ host: '127.0.0.1', port: 5353 })
    expect(parseServer('[::1]:5300')).toMatchObject({ host: '::1', port: 5300, family: 6 })
    expect(parseServer('2001:db8::53')).toMatchObject({ host: '2001:db8::53', port: 53, family: 6 })
    expect(() => parseServer('dns.example.com')).toThrow(/Invalid DNS server/)
    expect(() => parseServer('1.2.3.4:99999')).toThrow(/Invalid DNS server/)
  })

  test('one-off functions and the memoised resolver use the configured servers', async () => {
    dns.set('example.net', [{ type: 'MX', exchange: 'mx.example.net', priority: 5 }, { type: 'TXT', data: ['v=spf1 ', '-all'] }])
    expect((await resolveMx('example.net', { servers: [dns.server] })).records).toEqual([{ exchange: 'mx.example.net', priority: 5 }])
    expect(await resolveTxt('example.net', { servers: [dns.server] })).toEqual(['v=spf1 -all'])
    const config = { dnsServers: [dns.server] }
    expect(resolverFor(config)).toBe(resolverFor(config))
  })

  test('the caching resolver answers from cache within the TTL, fresh ones do not', async () => {
    dns.set('cached.example', [{ type: 'A', address: '192.0.2.1', ttl: 60 }])
    const cached = createResolver({ servers: [dns.server], cache: true })
    expect(await cached.resolveA('cached.example')).toEqual(['192.0.2.1'])
    dns.set('cached.example', [{ type: 'A', address: '192.0.2.2', ttl: 60 }])
    expect(await cached.resolveA('cached.example')).toEqual(['192.0.2.1'])
    expect(await r.resolveA('cached.example')).toEqual(['192.0.2.2'])
    // negative answers are cached too, temporary failures are not
    expect((await failure(cached.resolveA('gone.example'))).code).toBe('NXDOMAIN')
    dns.set('gone.example', [{ type: 'A', address: '192.0.2.3' }])
    expect((await failure(cached.resolveA('gone.example'))).code).toBe('NXDOMAIN')
    dns.fail('flaky.example', 'SERVFAIL')
    expect((await failure(cached.resolveA('flaky.example'))).code).toBe('SERVFAIL')
    dns.fail('flaky.example', null).set('flaky.example', [{ type: 'A', address: '192.0.2.4' }])
    expect(await cached.resolveA('flaky.example')).toEqual(['192.0.2.4'])
  })
})
