import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { chooseAddress, forbiddenReason, formatIp, isAllowedAddress, isAllowedHost, parseAllowList, parseIp, parseIPv4, parseIPv6 } from '../../src/net/address-guard'

/** The address check alone: no connection is made by anything in this file. */

describe('forbiddenReason', () => {
  const refused: Array<[string, string]> = [
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.254', 'shared (CGNAT)'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.1.1', 'link-local'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['fd00::1', 'unique-local'],
    ['fc00::1', 'unique-local'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['100::1', 'reserved'],
    // IPv4-mapped, -compatible, -translated, NAT64 and 6to4 forms are judged by the IPv4 address inside.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a00:1', 'private'],
    ['::ffff:169.254.169.254', 'cloud metadata'],
    ['::ffff:a9fe:a9fe', 'cloud metadata'],
    ['::ffff:192.168.1.1', 'private'],
    ['::ffff:100.64.0.1', 'shared (CGNAT)'],
    ['0:0:0:0:0:ffff:127.0.0.1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['::10.0.0.1', 'private'],
    ['::8.8.8.8', 'reserved'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'cloud metadata'],
    ['64:ff9b:1::1', 'private'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:a00:1::', 'private'],
    // Numeric shorthands of IPv4 (inet_aton, WHATWG URL).
    ['127.1', 'loopback'],
    ['127.0.1', 'loopback'],
    ['2130706433', 'loopback'],
    ['0x7f000001', 'loopback'],
    ['0x7f.0.0.1', 'loopback'],
    ['0177.0.0.1', 'loopback'],
    ['017700000001', 'loopback'],
    ['0', 'unspecified'],
    ['10.1', 'private'],
    ['0xa9.0xfe.0xa9.0xfe', 'cloud metadata'],
    ['2852039166', 'cloud metadata'],
    ['127.0.0.1.', 'loopback'],
    // Not an address at all: refused (callers resolve names before asking).
    ['localhost', 'reserved'],
    ['example.com', 'reserved'],
    ['', 'reserved'],
  ]
  for (const [addr, reason] of refused) {
    test(`refuses ${addr || '(empty)'} as ${reason}`, () => {
      expect(forbiddenReason(addr)).toBe(reason as never)
    })
  }

  const allowed = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.15.255.255', '172.32.0.1', '100.63.255.255', '100.128.0.1',
    '169.253.255.255', '11.0.0.1', '2606:4700:4700::1111', '2a00:1450:4001:82b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808',
    '2002:808:808::1', '134744072' /* 8.8.8.8 */]
  for (const addr of allowed) {
    test(`allows ${addr}`, () => {
      expect(forbiddenReason(addr)).toBeNull()
    })
  }
})

describe('parsing', () => {
  test('IPv4 shorthands parse as inet_aton does', () => {
    expect(formatIp(parseIPv4('127.1') as Uint8Array)).toBe('127.0.0.1')
    expect(formatIp(parseIPv4('1.2.65535') as Uint8Array)).toBe('1.2.255.255')
    expect(formatIp(parseIPv4('0x7f.1') as Uint8Array)).toBe('127.0.0.1')
    expect(parseIPv4('256.1.1.1')).toBeNull()
    expect(parseIPv4('1.2.3.4.5')).toBeNull()
    expect(parseIPv4('08.1.1.1')).toBeNull()
    expect(parseIPv4('4294967296')).toBeNull()
    expect(parseIPv4('1.2.3.x')).toBeNull()
  })
  test('IPv6 forms', () => {
    expect(formatIp(parseIPv6('0:0:0:0:0:0:0:1') as Uint8Array)).toBe('::1')
    expect(formatIp(parseIPv6('::ffff:127.0.0.1') as Uint8Array)).toBe('::ffff:7f00:1')
    expect(formatIp(parseIPv6('2001:db8:0:0:1:0:0:1') as Uint8Array)).toBe('2001:db8::1:0:0:1')
    expect(parseIPv6('1::2::3')).toBeNull()
    expect(parseIPv6('1:2:3:4:5:6:7:8:9')).toBeNull()
    expect(parseIPv6('1:2:3:4:5:6:7')).toBeNull()
    expect(parseIPv6('::1.2.3.4:1')).toBeNull()
    expect(parseIPv6('12345::')).toBeNull()
    expect(parseIp('[fe80::1%25eth0]')?.length).toBe(16)
  })
  test('the URL parser and ours agree on what a host is', () => {
    for (const [raw, addr] of [['http://127.1/', '127.0.0.1'], ['http://0x7f000001/', '127.0.0.1'], ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1'], ['http://017700000001/', '127.0.0.1']]) {
      const host = new URL(raw).hostname
      expect(formatIp(parseIp(host) as Uint8Array)).toBe(addr)
      expect(forbiddenReason(host)).toBe('loopback')
    }
  })
})

describe('allow-list', () => {
  test('names, addresses and wildcards', () => {
    const allow = parseAllowList([' Hooks.Internal. ', '10.0.0.5', '[FD00::5]', '*.svc.example', ''])
    expect(allow).toEqual(['hooks.internal', '10.0.0.5', 'fd00::5', '*.svc.example'])
    expect(isAllowedHost('hooks.internal', allow)).toBe(true)
    expect(isAllowedHost('HOOKS.internal.', allow)).toBe(true)
    expect(isAllowedHost('10.0.0.5', allow)).toBe(true)
    expect(isAllowedHost('[fd00:0::5]', allow)).toBe(true)
    expect(isAllowedHost('a.svc.example', allow)).toBe(true)
    expect(isAllowedHost('svc.example', allow)).toBe(false)
    expect(isAllowedHost('evilsvc.example', allow)).toBe(false)
    expect(isAllowedHost('10.0.0.6', allow)).toBe(false)
    expect(isAllowedHost('hooks.internal.evil.com', allow)).toBe(false)
    expect(isAllowedHost('anything', [])).toBe(false)
  })
  test('MAILCTL_WEBHOOK_ALLOW_HOSTS: a comma-separated list, empty by default', () => {
    const load = (env: Record<string, string>) => loadConfig({ env: { MAILCTL_DATA_DIR: '/tmp/mailctl-unused', ...env } })
    expect(load({}).webhookAllowHosts).toEqual([])
    expect(load({ MAILCTL_WEBHOOK_ALLOW_HOSTS: 'hooks.internal, 10.0.0.5 ,,*.svc' }).webhookAllowHosts).toEqual(['hooks.internal', '10.0.0.5', '*.svc'])
  })
})

describe('allow-list: CIDR ranges (MAILCTL_WEBHOOK_ALLOW_HOSTS and MAILCTL_DELIVERY_ALLOW_HOSTS)', () => {
  test('ranges are normalised and match the addresses inside them, IPv4-mapped IPv6 included', () => {
    const allow = parseAllowList(['127.0.0.0/8', ' 10.1.0.0/16 ', 'FD00::/8', '192.168.7.9/32'])
    expect(allow).toEqual(['127.0.0.0/8', '10.1.0.0/16', 'fd00::/8', '192.168.7.9/32'])
    expect(isAllowedAddress('127.0.0.1', allow)).toBe(true)
    expect(isAllowedAddress('127.255.1.2', allow)).toBe(true)
    expect(isAllowedAddress('::ffff:127.0.0.1', allow)).toBe(true)
    expect(isAllowedAddress('10.1.200.3', allow)).toBe(true)
    expect(isAllowedAddress('10.2.0.1', allow)).toBe(false)
    expect(isAllowedAddress('fd12:3456::1', allow)).toBe(true)
    expect(isAllowedAddress('fe80::1', allow)).toBe(false)
    expect(isAllowedAddress('192.168.7.9', allow)).toBe(true)
    expect(isAllowedAddress('192.168.7.10', allow)).toBe(false)
    expect(isAllowedAddress('128.0.0.1', allow)).toBe(false)
    // A range matches addresses, never names.
    expect(isAllowedHost('localhost', allow)).toBe(false)
    expect(isAllowedHost('127.0.0.5', allow)).toBe(true)
    expect(isAllowedAddress('not-an-ip', ['0.0.0.0/0'])).toBe(false)
    expect(isAllowedAddress('8.8.8.8', ['0.0.0.0/0'])).toBe(true)
  })
  test('odd prefix lengths compare the partial byte', () => {
    const allow = parseAllowList(['172.16.0.0/12'])
    expect(isAllowedAddress('172.31.255.255', allow)).toBe(true)
    expect(isAllowedAddress('172.32.0.0', allow)).toBe(false)
    expect(isAllowedAddress('172.15.255.255', allow)).toBe(false)
  })
  test('a malformed range is refused, and the settings refuse it at start-up naming the setting', () => {
    expect(() => parseAllowList(['127.0.0.0/33'])).toThrow('CIDR')
    expect(() => parseAllowList(['fd00::/129'])).toThrow('CIDR')
    expect(() => parseAllowList(['host.example/8'])).toThrow('CIDR')
    expect(() => parseAllowList(['10.0.0.0/'])).toThrow('CIDR')
    const load = (env: Record<string, string>) => loadConfig({ env: { MAILCTL_DATA_DIR: '/tmp/mailctl-unused', ...env } })
    expect(() => load({ MAILCTL_DELIVERY_ALLOW_HOSTS: 'mx.internal, 10.0.0.0/99' })).toThrow('MAILCTL_DELIVERY_ALLOW_HOSTS')
    expect(() => load({ MAILCTL_WEBHOOK_ALLOW_HOSTS: '10.0.0.0/x' })).toThrow('MAILCTL_WEBHOOK_ALLOW_HOSTS')
    expect(load({}).deliveryAllowHosts).toEqual([])
    expect(load({ MAILCTL_DELIVERY_ALLOW_HOSTS: '127.0.0.0/8, mx.internal' }).deliveryAllowHosts).toEqual(['127.0.0.0/8', 'mx.internal'])
  })
  test('chooseAddress: an answer inside an allowed range is no longer refused; others still are', () => {
    expect(chooseAddress('hooks.example', ['10.9.0.4'], parseAllowList(['10.9.0.0/16']))).toEqual({ ok: true, address: '10.9.0.4' })
    expect(chooseAddress('hooks.example', ['10.9.0.4', '127.0.0.1'], parseAllowList(['10.9.0.0/16']))).toEqual({ ok: false, address: '127.0.0.1', reason: 'loopback' })
  })
})

describe('chooseAddress', () => {
  test('one refused answer refuses the name, whatever its position', () => {
    expect(chooseAddress('mixed.example', ['93.184.216.34', '127.0.0.1'], [])).toEqual({ ok: false, address: '127.0.0.1', reason: 'loopback' })
    expect(chooseAddress('mixed.example', ['10.0.0.1', '93.184.216.34'], [])).toEqual({ ok: false, address: '10.0.0.1', reason: 'private' })
    expect(chooseAddress('v6.example', ['2606:4700::1', 'fd00:ec2::254'], [])).toEqual({ ok: false, address: 'fd00:ec2::254', reason: 'cloud metadata' })
  })
  test('public answers: the first is used', () => {
    expect(chooseAddress('ok.example', ['93.184.216.34', '2606:4700::1'], [])).toEqual({ ok: true, address: '93.184.216.34' })
  })
  test('an allowed host takes its first answer unchecked; no answer is null', () => {
    expect(chooseAddress('hooks.internal', ['10.0.0.5'], ['hooks.internal'])).toEqual({ ok: true, address: '10.0.0.5' })
    expect(chooseAddress('x.example', [], [])).toBeNull()
  })
})

describe('allow-list: host:port entries (issue 35, item 13)', () => {
  test('entries with a port are normalised; a bare IPv6 address keeps every colon as its own', () => {
    expect(parseAllowList(['Hooks.Internal:8080', '10.0.0.5:0443', '[FD00::5]:8443', '*.svc.example:443', 'fd00::6', '[fd00::7]']))
      .toEqual(['hooks.internal:8080', '10.0.0.5:443', '[fd00::5]:8443', '*.svc.example:443', 'fd00::6', 'fd00::7'])
  })
  test('an entry with a port allows that port only, and nothing when the caller names no port', () => {
    const allow = parseAllowList(['hooks.internal:8080', '10.0.0.5:443', '[fd00::5]:8443', '*.svc.example:443'])
    expect(isAllowedHost('hooks.internal', allow, 8080)).toBe(true)
    expect(isAllowedHost('hooks.internal', allow, '8080')).toBe(true)
    expect(isAllowedHost('hooks.internal', allow, 8081)).toBe(false)
    expect(isAllowedHost('hooks.internal', allow, 80)).toBe(false)
    expect(isAllowedHost('hooks.internal', allow)).toBe(false)
    expect(isAllowedAddress('10.0.0.5', allow, 443)).toBe(true)
    expect(isAllowedAddress('10.0.0.5', allow, 22)).toBe(false)
    expect(isAllowedAddress('fd00:0::5', allow, 8443)).toBe(true)
    expect(isAllowedAddress('fd00::5', allow, 443)).toBe(false)
    expect(isAllowedHost('a.svc.example', allow, 443)).toBe(true)
    expect(isAllowedHost('a.svc.example', allow, 6379)).toBe(false)
  })
  test('an entry without a port still allows every port', () => {
    const allow = parseAllowList(['hooks.internal', '10.0.0.0/8'])
    for (const port of [80, 443, 6379, undefined]) {
      expect(isAllowedHost('hooks.internal', allow, port)).toBe(true)
      expect(isAllowedAddress('10.1.2.3', allow, port)).toBe(true)
    }
  })
  test('chooseAddress: a private answer of a host allowed on another port stays refused', () => {
    const allow = parseAllowList(['hooks.internal:8080', '10.0.0.9:8080'])
    expect(chooseAddress('hooks.internal', ['10.0.0.5'], allow, 8080)).toEqual({ ok: true, address: '10.0.0.5' })
    expect(chooseAddress('hooks.internal', ['10.0.0.5'], allow, 6379)).toEqual({ ok: false, address: '10.0.0.5', reason: 'private' })
    expect(chooseAddress('other.example', ['10.0.0.9'], allow, 8080)).toEqual({ ok: true, address: '10.0.0.9' })
    expect(chooseAddress('other.example', ['10.0.0.9'], allow, 22)).toEqual({ ok: false, address: '10.0.0.9', reason: 'private' })
    for (const [addr, reason] of [['169.254.169.254', 'cloud metadata'], ['169.254.1.1', 'link-local'], ['192.168.1.1', 'private'], ['100.64.0.1', 'shared (CGNAT)'], ['fe80::1', 'link-local'], ['::ffff:10.0.0.1', 'private']] as const) {
      expect(chooseAddress('x.example', [addr], allow, 8080)).toMatchObject({ ok: false, reason })
    }
  })
  test('a malformed port is refused, and the settings refuse it at start-up naming the setting', () => {
    for (const bad of ['hooks.internal:', 'hooks.internal:0', 'hooks.internal:65536', 'hooks.internal:http', '[fd00::5]:x', ':8080', '10.0.0.0/8:80']) {
      expect(() => parseAllowList([bad])).toThrow()
    }
    const load = (env: Record<string, string>) => loadConfig({ env: { MAILCTL_DATA_DIR: '/tmp/mailctl-unused', ...env } })
    expect(() => load({ MAILCTL_WEBHOOK_ALLOW_HOSTS: 'hooks.internal:99999' })).toThrow('MAILCTL_WEBHOOK_ALLOW_HOSTS')
    expect(() => load({ MAILCTL_DELIVERY_ALLOW_HOSTS: 'mx.internal:x' })).toThrow('MAILCTL_DELIVERY_ALLOW_HOSTS')
    expect(load({ MAILCTL_WEBHOOK_ALLOW_HOSTS: 'hooks.internal:8080' }).webhookAllowHosts).toEqual(['hooks.internal:8080'])
  })
})
