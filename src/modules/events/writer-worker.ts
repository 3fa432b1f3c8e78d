/**
 * The track writer thread (see writer.ts): its own connection to the SQLite file, one group-committed
 * transaction per batch. Messages are JSON text (cheaper to hand between threads than cloned objects):
 * - in: {init: {url, synchronous, port}} on the worker; then on that port {batch: JSON of WriterItem[]},
 *   and {close: true}, which closes the connections and ends the thread;
 * - out, once a batch has committed: {reply: JSON of WriterReply[], stats}.
 */
import { openStore, type Store } from '../../db/client'
import type { ContactData } from '../contacts/data'
import { GroupCommit } from './batch'
import { writeTrack } from './track-write'

declare const self: Worker

export type WriterItem = [id: number, projectId: string, nowMs: number, email: string, event: string, subscribed: boolean | null, data: ContactData | null]
/**
 * Per item: the contact id, the tracked event's id and the subscription events appended before it
 * ([id, name, data]; all events are created at the item's time), or null and the error message.
 */
export type WriterReply = [id: number, contactId: string, eventId: string, before: Array<[id: string, name: string, data: Record<string, unknown>]> | null] | [id: number, contactId: null, error: string]
export type WriterMessage = { init: { url: string; synchronous: 'FULL' | 'NORMAL'; port: MessagePort } } | { batch: string } | { close: true }
export interface WriterStats { batches: number; writes: number; retries: number }

let store: Store | null = null
let group: GroupCommit | null = null

let port: MessagePort | null = null

self.onmessage = (event: MessageEvent<WriterMessage>) => {
  const msg = event.data
  if (!('init' in msg)) return
  store = openStore(msg.init.url, { sqliteSynchronous: msg.init.synchronous })
  group = new GroupCommit(store)
  port = msg.init.port
  port.onmessage = onBatch
}

async function onBatch(event: MessageEvent<WriterMessage>) {
  const msg = event.data
  if ('init' in msg) return
  if ('close' in msg) {
    await store?.close()
    process.exit(0)
  }
  const s = store!
  const g = group!
  const items = JSON.parse(msg.batch) as WriterItem[]
  // Submitted in one turn: one batch, one commit (GroupCommit splits above its maximum batch).
  const settled = await Promise.allSettled(items.map(([, projectId, nowMs, email, name, subscribed, data]) => {
    const ctx = { store: s, projectId, now: new Date(nowMs) }
    return g.run((db) => writeTrack(ctx, db, { email, event: name, subscribed: subscribed ?? undefined, data }), { pure: true })
  }))
  const reply: WriterReply[] = settled.map((r, i): WriterReply => {
    const id = items[i][0]
    if (r.status === 'rejected') return [id, null, r.reason instanceof Error ? r.reason.message : String(r.reason)]
    const { contactId, event: ev, events } = r.value
    return [id, contactId, ev.id, events.length > 1 ? events.slice(0, -1).map((e) => [e.id, e.name, e.data ?? {}]) : null]
  })
  port!.postMessage({ reply: JSON.stringify(reply), stats: g.stats })
}
