import { describe, expect, test } from 'bun:test'
import { parseReply, retryDelayMs, retryHintMs, shouldSuppress, verdictOf, RETRY_CAP_MS } from '../../src/mail/outbound/replies'
import { Destination, Throttle, throttleKind, type Slot } from '../../src/mail/outbound/throttle'
import { parseVerp, verpAddress } from '../../src/mail/outbound/verp'
import { advance, EMAIL_STATUSES } from '../../src/modules/emails/status'
import { smartHostTarget } from '../../src/mail/outbound/smarthost'

/** The pure rules of the outbound pipeline: replies, retries, throttling, VERP and status order. */

describe('SMTP replies', () => {
  test('parse code, enhanced code and text', () => {
    expect(parseReply('550 5.1.1 <x@y> No such user')).toEqual({ code: 550, enhanced: '5.1.1', text: '550 5.1.1 <x@y> No such user' })
    expect(parseReply('451 Try later')).toMatchObject({ code: 451, enhanced: null })
    expect(parseReply('421-4.7.0 Too many\r\n421 4.7.0 connections').text).toBe('421-4.7.0 Too many connections')
  })

  test('verdicts: 2xx delivered, 5xx permanent, rate and connection limits throttle, other 4xx temporary', () => {
    expect(verdictOf(parseReply('250 2.0.0 OK'))).toBe('delivered')
    expect(verdictOf(parseReply('550 5.1.1 unknown'))).toBe('permanent')
    expect(verdictOf(parseReply('421 4.7.0 Too many concurrent connections'))).toBe('throttle')
    expect(verdictOf(parseReply('450 4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages: rate limit'))).toBe('throttle')
    expect(verdictOf(parseReply('451 4.7.1 Greylisted, try again in 60 seconds'))).toBe('temporary')
    expect(verdictOf({ code: 0, enhanced: null, text: 'ETIMEDOUT' })).toBe('temporary')
  })

  test('suppression: bad mailboxes and domains yes; policy, content, size and full mailboxes no', () => {
    expect(shouldSuppress(parseReply('550 5.1.1 No such user'), 'rcpt')).toBe(true)
    expect(shouldSuppress(parseReply('550 5.1.10 null MX'), 'other')).toBe(true)
    expect(shouldSuppress(parseReply('550 5.2.1 Mailbox disabled'), 'rcpt')).toBe(true)
    expect(shouldSuppress(parseReply('550 5.7.1 Rejected as spam'), 'rcpt')).toBe(false)
    expect(shouldSuppress(parseReply('552 5.2.2 Mailbox full'), 'rcpt')).toBe(false)
    expect(shouldSuppress(parseReply('552 5.3.4 Message too big'), 'other')).toBe(false)
    expect(shouldSuppress(parseReply('550 User unknown'), 'rcpt')).toBe(true)
    expect(shouldSuppress(parseReply('554 Message rejected: spam content'), 'other')).toBe(false)
    expect(shouldSuppress(parseReply('451 4.1.1 later'), 'rcpt')).toBe(false)
  })

  test('retry hints in seconds, minutes and hours; exponential backoff otherwise, capped', () => {
    expect(retryHintMs('451 4.7.1 Greylisted, please try again in 300 seconds')).toBe(300_000)
    expect(retryHintMs('421 Try again later in 5 minutes')).toBe(300_000)
    expect(retryHintMs('451 retry in 2 hours')).toBe(7_200_000)
    expect(retryHintMs('451 4.3.0 Temporary failure')).toBeNull()
    expect(retryDelayMs(3, '451 try again in 10 secs')).toBe(10_000)
    expect(retryDelayMs(1, '451 later', () => 0.5)).toBe(60_000)
    expect(retryDelayMs(2, '451 later', () => 0.5)).toBe(120_000)
    expect(retryDelayMs(5, '451 later', () => 0.5)).toBe(16 * 60_000)
    expect(retryDelayMs(50, '451 later', () => 0.5)).toBe(RETRY_CAP_MS)
    expect(retryDelayMs(1, '451 later', () => 0)).toBe(54_000)
    expect(retryDelayMs(1, '451 later', () => 1)).toBe(66_000)
  })
})

describe('per-destination throttle (AIMD)', () => {
  test('halves on a throttling reply, grows by one after a run of successes, queues beyond the limit', async () => {
    const d = new Destination('mx.example', { initial: 8, max: 10, min: 1, recoverAfter: 3, maxWaiting: 2 })
    d.throttled()
    expect(d.limit).toBe(4)
    d.throttled(); d.throttled(); d.throttled()
    expect(d.limit).toBe(1)
    expect(await d.acquire()).toBe(true)
    let second: Slot = false
    const waiting = d.acquire().then((ok) => { second = ok })
    expect(d.queued).toBe(1)
    expect(await Promise.race([waiting.then(() => 'got'), Bun.sleep(5).then(() => 'waiting')])).toBe('waiting')
    void d.acquire()
    expect(await d.acquire()).toBe(false) // a third waiter is refused (maxWaiting 2)
    // Back to the limit of the last refusal takes ten runs of recoverAfter (3) successes: not after one run.
    d.success(); d.success(); d.success()
    expect(d.limit).toBe(1)
    for (let i = 0; i < 27; i++) d.success()
    expect(d.limit).toBe(2) // recovered by one, which lets the first waiter in
    await waiting
    expect(second).toBe(true)
    const t = new Throttle({ initial: 3, max: 5, min: 1, recoverAfter: 1, maxWaiting: 10 })
    expect(t.get('a')).toBe(t.get('a'))
    t.get('a').throttled()
    expect(t.snapshot()).toEqual([{ key: 'a', limit: 1, active: 0, queued: 0, rate: null }])
  })

  test('a rate reply paces the destination below what it accepted; successes raise the rate again and lift it', async () => {
    expect(throttleKind(parseReply('421 4.7.0 Too many concurrent connections, try again later'))).toBe('connections')
    expect(throttleKind(parseReply('451 4.7.1 Rate limited: too many messages, slow down'))).toBe('rate')
    expect(throttleKind(parseReply('421 4.7.0 Try again later'))).toBe('connections')
    const d = new Destination('mx.rate', { initial: 8, max: 8, min: 1, recoverAfter: 5, maxWaiting: 100 })
    // 40 accepted since its first success 1.5 s ago: 26.7/s; a rate reply paces at 0.9 of that; the connection limit stays.
    const t0 = Date.now()
    for (let i = 0; i < 40; i++) d.success(t0 - 1500 + i * 30)
    d.throttled('rate', t0)
    expect(d.rate).toBeCloseTo(24, 5)
    expect(d.limit).toBe(8)
    // More refusals within a second are of deliveries started before the cut: no further cut.
    d.throttled('rate', t0 + 500)
    expect(d.rate).toBeCloseTo(24, 5)
    // Paced: 4 deliveries take at least 3 intervals of 1/24 s (41.7 ms) after the first one's wait.
    const start = Date.now()
    for (let i = 0; i < 4; i++) { expect(await d.acquire()).toBe(true); d.release() }
    expect(Date.now() - start).toBeGreaterThanOrEqual(3 * 41)
    // recoverAfter successes: +1/s and 5 %, but not above 0.95 of the rate it accepted when it refused (25.3).
    for (let i = 0; i < 5; i++) d.success()
    expect(d.rate).toBeCloseTo(0.95 * 40 / 1.5, 5)
    // At that ceiling, 1/s more only after ten runs of successes.
    for (let i = 0; i < 45; i++) d.success()
    expect(d.rate).toBeCloseTo(0.95 * 40 / 1.5, 5)
    for (let i = 0; i < 5; i++) d.success()
    expect(d.rate).toBeCloseTo(0.95 * 40 / 1.5 + 1, 5)
    // A connection reply lowers the connections (idle: by half), not the rate.
    d.throttled('connections')
    expect(d.limit).toBe(4)
    expect(d.rate).toBeCloseTo(0.95 * 40 / 1.5 + 1, 5)
    // Successes at 5/s while the rate climbs: once it is far above that (4 x 5 + 10), the pacing is lifted.
    const later = Date.now() + 10_000
    let n = 0
    for (; n < 1000 && d.rate !== null; n++) d.success(later + n * 200)
    expect(d.rate).toBeNull()
    expect(n).toBeGreaterThanOrEqual(5)
    // Refused one connection more than it takes: the limit goes to the connections that worked.
    const c = new Destination('mx.conns', { initial: 8, max: 8, min: 1, recoverAfter: 5, maxWaiting: 100 })
    for (let i = 0; i < 3; i++) expect(await c.acquire()).toBe(true)
    c.throttled('connections')
    expect(c.limit).toBe(4) // 3 active (2 working and the refused one): not below half at once
    for (let i = 0; i < 3; i++) c.release()
    for (let i = 0; i < 4; i++) expect(await c.acquire()).toBe(true)
    c.throttled('connections')
    expect(c.limit).toBe(3) // 4 active (3 working and the refused one)
    // Refused again at the limit it last refused at: twice as many runs of successes before asking again.
    for (let i = 0; i < 4; i++) c.release()
    for (let i = 0; i < 10 * 5; i++) c.success()
    expect(c.limit).toBe(4)
    for (let i = 0; i < 4; i++) expect(await c.acquire()).toBe(true)
    c.throttled('connections')
    expect(c.limit).toBe(3)
    for (let i = 0; i < 4; i++) c.release()
    for (let i = 0; i < 10 * 5; i++) c.success()
    expect(c.limit).toBe(3)
    for (let i = 0; i < 10 * 5; i++) c.success()
    expect(c.limit).toBe(4)
    // A rate reply with nothing accepted lately halves the rate (here: from the connection limit).
    const e = new Destination('mx.quiet', { initial: 8, max: 8, min: 1, recoverAfter: 5, maxWaiting: 100 })
    e.throttled('rate')
    expect(e.rate).toBe(4)
  })

  test('shed: the deliveries waiting for a slot are answered \'shed\', those holding one keep it', async () => {
    const t = new Throttle({ initial: 2, max: 4, min: 1, recoverAfter: 5, maxWaiting: 100 })
    const d = t.get('mx.stalled')
    expect(await d.acquire()).toBe(true)
    expect(await d.acquire()).toBe(true)
    const waiting = [d.acquire(), d.acquire(), d.acquire()]
    expect(t.connections('mx.stalled')).toBe(2)
    expect(t.connections('mx.unseen')).toBe(2)
    expect(t.shed('mx.stalled')).toBe(3)
    expect(await Promise.all(waiting)).toEqual(['shed', 'shed', 'shed'])
    expect(t.shed('mx.unseen')).toBe(0)
    expect(d.active).toBe(2)
    expect(d.queued).toBe(0)
    // Until one of its deliveries ends, a delivery that would wait is shed at once; then they wait again.
    expect(await d.acquire()).toBe('shed')
    d.release()
    expect(await d.acquire()).toBe(true)
    const next = d.acquire()
    expect(d.queued).toBe(1)
    d.release()
    expect(await next).toBe(true)
  })
})

describe('VERP', () => {
  const deps = { secret: 'test-secret' }
  const id = '01a2007d-710f-7496-bc3a-82afe302a734'
  test('round trip, case-insensitive, forged or foreign addresses rejected', () => {
    const a = verpAddress(deps, id, 'Bounce.Example.com')
    expect(a).toMatch(/^b\+01a2007d-710f-7496-bc3a-82afe302a734\.[0-9a-f]{10}@bounce\.example\.com$/)
    expect(a.split('@')[0].length).toBeLessThanOrEqual(64)
    expect(parseVerp(deps, a)).toEqual({ emailId: id, domain: 'bounce.example.com' })
    expect(parseVerp(deps, `<${a.toUpperCase()}>`)).toEqual({ emailId: id, domain: 'bounce.example.com' })
    expect(parseVerp({ secret: 'other' }, a)).toBeNull()
    expect(parseVerp(deps, a.replace(id, '01a2007d-710f-7496-bc3a-82afe302a735'))).toBeNull()
    expect(parseVerp(deps, 'someone@example.com')).toBeNull()
    expect(parseVerp(deps, '')).toBeNull()
  })
})

describe('email status', () => {
  test('only moves forward', () => {
    expect(EMAIL_STATUSES[0]).toBe('PENDING')
    expect(advance('PENDING', 'SENDING')).toBe('SENDING')
    expect(advance('OPENED', 'DELIVERED')).toBe('OPENED')
    expect(advance('DELIVERED', 'BOUNCED')).toBe('BOUNCED')
    expect(advance('CLICKED', 'OPENED')).toBe('CLICKED')
    expect(advance('COMPLAINED', 'OPENED')).toBe('COMPLAINED')
  })
})

describe('smart host URL', () => {
  test('smtp:// and smtps:// with credentials', () => {
    expect(smartHostTarget('smtp://user%40x:p%3Ass@relay.example.com:2525')).toEqual({ host: 'relay.example.com', port: 2525, servername: 'relay.example.com', secure: false, auth: { user: 'user@x', pass: 'p:ss' } })
    expect(smartHostTarget('smtps://relay.example.com')).toMatchObject({ port: 465, secure: true })
    expect(smartHostTarget('smtp://relay.example.com')).toMatchObject({ port: 587, secure: false })
    expect(smartHostTarget('smtp://relay.example.com').auth).toBeUndefined()
  })
})
