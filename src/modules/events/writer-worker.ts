/**
 * The threads of the track writer (see writer.ts), one module for both roles:
 * - writer: its own connection to the SQLite file, one group-committed transaction per batch. Its
 *   automatic checkpoint (wal_autocheckpoint, see db/client.ts) finds the WAL mostly copied already by
 *   the checkpointer and copies only the rest, which lets the next transaction restart the WAL from its
 *   start (a checkpoint of the whole WAL stalled a commit for up to ~100 ms).
 *   Messages are JSON (cheaper to hand between threads than cloned objects): in, on the port given at
 *   init, {batch: UTF-8 JSON of WriterItem[] in a transferred ArrayBuffer} and {close: true} (closes the
 *   connections, ends the thread);
 *   out, once a batch has committed, {reply: JSON of WriterReply[], stats}.
 * - checkpointer: every CHECKPOINT_MS a PASSIVE checkpoint on a connection of its own, which copies the
 *   WAL into the database file while the writer goes on committing (it blocks no writer and no reader).
 *   Alone it would never let the WAL restart: the writer keeps appending while it copies.
 */
import { Database } from 'bun:sqlite'
import { openStore, sqlitePath, type Store } from '../../db/client'
import { AppError, type ErrorCode, type FieldError } from '../../errors'
import type { ContactData } from '../contacts/data'
import type { Claim, HeldKey } from '../idempotency/repo'
import { GroupCommit } from './batch'
import { writeTrack } from './track-write'

declare const self: Worker

export type WriterItem = [id: number, projectId: string, nowMs: number, email: string, event: string, subscribed: boolean | null, data: ContactData | null, claim: Claim | null]
/**
 * Per item, one of:
 * - [id, 'ok', contact id, tracked event's id, subscription events appended before it ([id, name, data];
 *   all events are created at the item's time) or null];
 * - [id, 'reused', the row holding the Idempotency-Key];
 * - [id, 'refused', the AppError's code, message and field errors]: a 4xx the main thread throws as is
 *   (a contact's data growing past its limit is only known once the contact is read here);
 * - [id, 'error', message].
 */
export type WriterReply =
  | [id: number, kind: 'ok', contactId: string, eventId: string, before: Array<[id: string, name: string, data: Record<string, unknown>]> | null]
  | [id: number, kind: 'reused', held: HeldKey]
  | [id: number, kind: 'refused', code: ErrorCode, message: string, errors: FieldError[] | null]
  | [id: number, kind: 'error', message: string]
export type WriterMessage =
  | { init: { role: 'writer'; url: string; synchronous: 'FULL' | 'NORMAL'; port: MessagePort } }
  | { init: { role: 'checkpointer'; url: string; port: MessagePort } }
  | { batch: ArrayBuffer }
  | { close: true }
export interface WriterStats { batches: number; writes: number; retries: number }

let store: Store | null = null
let group: GroupCommit | null = null

let port: MessagePort | null = null

const CHECKPOINT_MS = 250

self.onmessage = (event: MessageEvent<WriterMessage>) => {
  const msg = event.data
  if (!('init' in msg)) return
  const init = msg.init
  port = init.port
  if (init.role === 'checkpointer') {
    const db = new Database(sqlitePath(init.url))
    const checkpoint = db.query('PRAGMA wal_checkpoint(PASSIVE)')
    const timer = setInterval(() => checkpoint.get(), CHECKPOINT_MS)
    port.onmessage = () => { clearInterval(timer); db.close(); process.exit(0) }
    return
  }
  const s = openStore(init.url, { sqliteSynchronous: init.synchronous })
  store = s
  group = new GroupCommit(s)
  port.onmessage = onBatch
  // A 32 MB page cache for this connection (SQLite's default is 2 MB): the pages tracks touch at random
  // (contacts by email, events by contact) stay in memory instead of being read again through the OS,
  // about 6 µs of CPU per track. (Its transaction takes the writer's mutex before any batch can.)
  void s.tx(async (db) => { (db as unknown as { $client: Database }).$client.run('PRAGMA cache_size = -32768') })
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
  const items = JSON.parse(Buffer.from(msg.batch).toString()) as WriterItem[]
  // Submitted in one turn: one batch, one commit (GroupCommit splits above its maximum batch).
  const settled = await Promise.allSettled(items.map(([, projectId, nowMs, email, name, subscribed, data, claim]) => {
    const ctx = { store: s, projectId, now: new Date(nowMs) }
    return g.run((db) => writeTrack(ctx, db, { email, event: name, subscribed: subscribed ?? undefined, data, claim }), { pure: true })
  }))
  const reply: WriterReply[] = settled.map((r, i): WriterReply => {
    const id = items[i][0]
    if (r.status === 'rejected') {
      const e = r.reason
      if (e instanceof AppError && e.status < 500) return [id, 'refused', e.code, e.message, e.opts.errors ?? null]
      return [id, 'error', e instanceof Error ? e.message : String(e)]
    }
    if (r.value.reused) return [id, 'reused', r.value.reused]
    const { contactId, event: ev, events } = r.value
    return [id, 'ok', contactId, ev.id, events.length > 1 ? events.slice(0, -1).map((e): [string, string, Record<string, unknown>] => [e.id, e.name, e.data ?? {}]) : null]
  })
  port!.postMessage({ reply: JSON.stringify(reply), stats: g.stats })
}
