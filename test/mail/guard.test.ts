import { describe, expect, test } from 'bun:test'
import { allowedTargets, guardRoute } from '../../src/mail/outbound/guard'
import { RouteError } from '../../src/mail/outbound/mx'
import { parseAllowList } from '../../src/net/address-guard'

/**
 * The delivery guard on its own (no connection is ever made here): which MX targets direct delivery may
 * connect to, and the bounce when none is left (src/mail/outbound/guard.ts).
 */

const route = [
  { name: 'mx1.corp.example', addresses: ['10.1.2.3', '192.168.0.7'] },
  { name: 'mx2.corp.example', addresses: ['127.0.0.1', '::1', '169.254.169.254'] },
  { name: 'mx3.public.example', addresses: ['93.184.216.34', 'fd00::25', '2606:4700::1'] },
]

describe('delivery guard', () => {
  test('internal addresses are dropped from the route; public ones are kept in order', () => {
    const r = allowedTargets(route, [])
    expect(r.hosts).toEqual([{ name: 'mx3.public.example', addresses: ['93.184.216.34', '2606:4700::1'] }])
    expect(r.refused).toEqual([
      { host: 'mx1.corp.example', address: '10.1.2.3', reason: 'private' },
      { host: 'mx1.corp.example', address: '192.168.0.7', reason: 'private' },
      { host: 'mx2.corp.example', address: '127.0.0.1', reason: 'loopback' },
      { host: 'mx2.corp.example', address: '::1', reason: 'loopback' },
      { host: 'mx2.corp.example', address: '169.254.169.254', reason: 'cloud metadata' },
      { host: 'mx3.public.example', address: 'fd00::25', reason: 'unique-local' },
    ])
  })

  test('a route with only internal targets is a permanent, non-suppressing 550 5.4.4 that names them', () => {
    let err: unknown
    try { guardRoute('corp.example', route.slice(0, 2), []) } catch (e) { err = e }
    expect(err).toBeInstanceOf(RouteError)
    const e = err as RouteError
    expect(e.permanent).toBe(true)
    expect(e.suppress).toBe(false)
    expect(e.reply.code).toBe(550)
    expect(e.reply.enhanced).toBe('5.4.4')
    expect(e.reply.text).toContain('the mail servers of corp.example resolve only to internal addresses')
    expect(e.reply.text).toContain('mx1.corp.example 10.1.2.3: private')
  })

  test('MAILCTL_DELIVERY_ALLOW_HOSTS: a host name allows all its addresses; a CIDR range or address allows those addresses only', () => {
    expect(guardRoute('corp.example', route, parseAllowList(['mx1.corp.example']))[0]).toEqual(route[0])
    expect(guardRoute('corp.example', route, parseAllowList(['*.corp.example'])).map((h) => h.name)).toEqual(['mx1.corp.example', 'mx2.corp.example', 'mx3.public.example'])
    expect(guardRoute('corp.example', route, parseAllowList(['127.0.0.0/8']))).toEqual([
      { name: 'mx2.corp.example', addresses: ['127.0.0.1'] },
      { name: 'mx3.public.example', addresses: ['93.184.216.34', '2606:4700::1'] },
    ])
    expect(guardRoute('corp.example', route, parseAllowList(['10.0.0.0/8', '::1']))).toEqual([
      { name: 'mx1.corp.example', addresses: ['10.1.2.3'] },
      { name: 'mx2.corp.example', addresses: ['::1'] },
      { name: 'mx3.public.example', addresses: ['93.184.216.34', '2606:4700::1'] },
    ])
  })

  test('spellings of internal addresses are recognised (the resolver hands back canonical text, but a route may not)', () => {
    const odd = [{ name: 'mx.odd.example', addresses: ['::ffff:127.0.0.1', '0:0:0:0:0:ffff:a00:1', '64:ff9b::a00:1'] }]
    expect(allowedTargets(odd, []).hosts).toEqual([])
  })
})
