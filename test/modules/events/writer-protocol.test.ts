import { expect, test } from 'bun:test'
import { decodeBatch, decodeReplies, encodeBatch, encodeReplies, type TrackItem, type TrackReply } from '../../../src/modules/events/writer-protocol'

const item = (id: number, over: Partial<TrackItem> = {}): TrackItem => ({
  id, projectId: 'p1', nowMs: 1_700_000_000_123, email: `u${id}@example.com`, event: 'signup', subscribed: null, data: null, claim: null, ...over,
})

test('a batch is a buffer of exactly its JSON bytes and decodes to the same items', () => {
  const items = [
    item(1),
    item(2, { subscribed: false, data: { plan: 'pro', tmp: { value: 1, persistent: false }, name: 'Zoë 😀' } }),
    item(3, { claim: { projectId: 'p1', key: 'k', method: 'POST', path: '/v1/track', requestHash: 'h', nowMs: 1, expiresAtMs: 2 } }),
  ]
  const buffer = encodeBatch(items)
  expect(buffer.byteLength).toBe(Buffer.byteLength(JSON.stringify(items)))
  expect(decodeBatch(buffer)).toEqual(items)
})

test('batches are transferred (moved, not copied) and decode on the other side', async () => {
  const items = Array.from({ length: 300 }, (_, i) => item(i, { data: { n: i } }))
  const small = [item(7)]
  const { port1, port2 } = new MessageChannel()
  const got = new Promise<ArrayBuffer[]>((resolve) => {
    const seen: ArrayBuffer[] = []
    port2.onmessage = (e: MessageEvent<ArrayBuffer>) => { seen.push(e.data); if (seen.length === 2) resolve(seen) }
  })
  for (const batch of [items, small]) {
    const buffer = encodeBatch(batch)
    port1.postMessage(buffer, [buffer])
    expect(buffer.byteLength).toBe(0)
  }
  const [big, one] = await got
  port1.close()
  port2.close()
  expect(decodeBatch(big)).toEqual(items)
  expect(decodeBatch(one)).toEqual(small)
})

test('replies of every kind decode to what was encoded', () => {
  const replies: TrackReply[] = [
    { type: 'ok', id: 1, contactId: 'c1', eventId: 'e1', before: [], owed: true },
    { type: 'ok', id: 2, contactId: 'c2', eventId: 'e3', before: [{ id: 'e2', name: 'contact.unsubscribed', data: {} }], owed: false },
    { type: 'reused', id: 3, held: { method: 'POST', path: '/v1/track', requestHash: 'h', createdAtMs: 5, statusCode: null } },
    { type: 'error', id: 4, message: 'SQLITE_BUSY' },
  ]
  expect(decodeReplies(encodeReplies(replies))).toEqual(replies)
})
