import { expect, test } from 'bun:test'
import { inlineEventId, inlineEventsOf, inlineMatches, type InlineSource } from '../../../src/modules/events/inline'

/**
 * The pure parts of src/modules/events/inline.ts: the events a row gives, their ids, and the recorder's
 * check that the row gives back exactly what it would have stored (else it stores the rows).
 */

const at = new Date('2026-11-27T07:00:00.123Z')
const row = (over: Partial<InlineSource> = {}): InlineSource => ({
  id: '01a21bab-99d9-707f-a181-d9c35db51297', projectId: 'p1', contactId: 'c1', attempts: 2, deliveredAt: at,
  deliveredTo: 'mx.dest.test[127.0.0.1]:25', lastReply: '250 2.0.0 OK queued as 12345', inlineEvents: 1, ...over,
})
// What the recorder stores for this delivery (recorder.ts, applyFinal, case 'accepted', without the base).
const stored = {
  sent: { attempt: 2, sentAt: at.toISOString(), host: 'mx.dest.test[127.0.0.1]:25' },
  delivery: { attempt: 2, deliveredAt: at.toISOString(), host: 'mx.dest.test[127.0.0.1]:25', reply: '250 2.0.0 OK queued as 12345', smtpCode: 250, enhancedCode: '2.0.0', tls: true },
}

test('a row gives email.sent then email.delivery, at its delivery time, with the data the recorder stores', () => {
  const [sent, delivery] = inlineEventsOf(row())
  expect(sent).toEqual({ id: '01a21bab-99d9-807f-a181-d9c35db51290', projectId: 'p1', contactId: 'c1', name: 'email.sent', data: stored.sent, emailId: row().id, createdAt: at })
  expect(delivery).toEqual({ id: '01a21bab-99d9-807f-a181-d9c35db51291', projectId: 'p1', contactId: 'c1', name: 'email.delivery', data: stored.delivery, emailId: row().id, createdAt: at })
  expect(Object.keys(delivery.data)).toEqual(Object.keys(stored.delivery))
  expect(sent.id < delivery.id).toBe(true)
  expect(inlineEventsOf(row(), ['email.delivery']).map((e) => e.name)).toEqual(['email.delivery'])
  expect(inlineEventsOf(row({ inlineEvents: 0 }))[1].data.tls).toBe(false)
})

test('a row whose events are stored rows, or that was never delivered, gives none', () => {
  expect(inlineEventsOf(row({ inlineEvents: null }))).toEqual([])
  expect(inlineEventsOf(row({ deliveredAt: null }))).toEqual([])
})

test('ids: version 8, unique per email and name, in the order of the emails', () => {
  const a = '01a21bab-99d9-707f-a181-d9c35db51297'
  const b = '01a21bab-99d9-707f-a181-d9c35db51298'
  expect(inlineEventId(a, 'email.sent')[14]).toBe('8')
  expect(new Set([inlineEventId(a, 'email.sent'), inlineEventId(a, 'email.delivery')]).size).toBe(2)
  const c = '01a21bab-99d9-707f-a181-d9c35db51397'
  expect(inlineEventId(a, 'email.delivery') < inlineEventId(c, 'email.sent')).toBe(true)
  expect(inlineEventId(b, 'email.sent')).toBe(inlineEventId(a, 'email.sent'))
})

test('the recorder inlines only when the row gives back exactly the stored data', () => {
  expect(inlineMatches(row(), stored)).toBe(true)
  // A reply whose codes the parser would read otherwise, a different host or attempt, another key order: rows.
  expect(inlineMatches(row(), { ...stored, delivery: { ...stored.delivery, smtpCode: 251 } })).toBe(false)
  expect(inlineMatches(row(), { ...stored, delivery: { ...stored.delivery, enhancedCode: null } })).toBe(false)
  expect(inlineMatches(row({ attempts: 3 }), stored)).toBe(false)
  expect(inlineMatches(row(), { ...stored, sent: { sentAt: stored.sent.sentAt, attempt: 2, host: stored.sent.host } })).toBe(false)
  expect(inlineMatches(row({ inlineEvents: null }), stored)).toBe(false)
  // A reply without an enhanced code reads back as null, as the recorder stores it.
  const plain = row({ lastReply: '250 OK' })
  expect(inlineMatches(plain, { ...stored, delivery: { ...stored.delivery, reply: '250 OK', enhancedCode: null } })).toBe(true)
})
