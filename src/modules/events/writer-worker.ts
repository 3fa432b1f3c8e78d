/**
 * The threads of the track writer (see writer.ts), one module for both roles:
 * - writer: its own connection to the SQLite file, one group-committed transaction per batch. Its
 *   automatic checkpoint (wal_autocheckpoint, see db/client.ts) finds the WAL mostly copied already by
 *   the checkpointer and copies only the rest, which lets the next transaction restart the WAL from its
 *   start (a checkpoint of the whole WAL stalled a commit for up to ~100 ms).
 *   On the port given at init it takes `batch` and `close` messages, and answers each batch, once it has
 *   committed, with one `committed` message (writer-protocol.ts). An `outbox` message (a drainer's claim of
 *   this process) joins the next commit and is answered by an `outbox` message.
 * - checkpointer: every CHECKPOINT_MS a PASSIVE checkpoint on a connection of its own, which copies the
 *   WAL into the database file while the writer goes on committing (it blocks no writer and no reader).
 *   Alone it would never let the WAL restart: the writer keeps appending while it copies. It ends at
 *   any message on its port (`close`).
 */
import { Database } from 'bun:sqlite'
import { openStore, sqliteConnection, sqlitePath, type Store } from '../../db/client'
import { GroupCommit } from '../../db/group-commit'
import { AppError } from '../../errors'
import { writeTrack } from './track-write'
import { adoptInterests } from './interest'
import { owedToConsumers } from './outbox'
import { claimOutboxIn } from './repo'
import { decodeBatch, encodeReplies, type FromWriter, type ToThread, type TrackReply } from './writer-protocol'

declare const self: Worker

const CHECKPOINT_MS = 250

self.onmessage = (event: MessageEvent<ToThread>) => {
  const msg = event.data
  if (msg.type !== 'init') return
  const port = msg.port
  if (msg.role === 'checkpointer') {
    const db = new Database(sqlitePath(msg.url))
    const checkpoint = db.query('PRAGMA wal_checkpoint(PASSIVE)')
    const timer = setInterval(() => checkpoint.get(), CHECKPOINT_MS)
    port.onmessage = () => { clearInterval(timer); db.close(); process.exit(0) }
    return
  }
  const store = openStore(msg.url, { sqliteSynchronous: msg.synchronous })
  const group = new GroupCommit(store)
  port.onmessage = (e: MessageEvent<ToThread>) => onMessage(store, group, port, e.data)
  // A 32 MB page cache for this connection (SQLite's default is 2 MB): the pages tracks touch at random
  // (contacts by email, events by contact) stay in memory instead of being read again through the OS,
  // about 6 µs of CPU per track. (Its transaction takes the writer's mutex before any batch can.)
  void store.tx(async (db) => { sqliteConnection(db).run('PRAGMA cache_size = -32768') })
}

async function onMessage(store: Store, group: GroupCommit, port: MessagePort, msg: ToThread) {
  if (msg.type === 'close') {
    await store.close()
    process.exit(0)
  }
  if (msg.type === 'outbox') {
    // Not pure (it runs in a savepoint of its own): a failing claim leaves the batch's tracks alone.
    const reply = await group.run((db) => claimOutboxIn(store, db, msg.holder, new Date(msg.nowMs), new Date(msg.untilMs), msg.maxRows, msg.candidates, msg.settle))
      .then((rows): FromWriter => ({ type: 'outbox', id: msg.id, rows, error: null }))
      .catch((e: unknown): FromWriter => ({ type: 'outbox', id: msg.id, rows: null, error: e instanceof Error ? e.message : String(e) }))
    port.postMessage(reply)
    return
  }
  if (msg.type !== 'batch') return
  if (msg.interests) adoptInterests(msg.interests)
  const items = decodeBatch(msg.items)
  // Submitted in one turn: one batch, one commit (GroupCommit splits above its maximum batch).
  const settled = await Promise.allSettled(items.map((item) => {
    const ctx = { store, projectId: item.projectId, now: new Date(item.nowMs) }
    const write = { email: item.email, event: item.event, subscribed: item.subscribed ?? undefined, data: item.data, claim: item.claim }
    return group.run((db) => writeTrack(ctx, db, write), { pure: true })
  }))
  const replies = settled.map((r, i): TrackReply => {
    const id = items[i].id
    if (r.status === 'rejected') {
      const e = r.reason
      if (e instanceof AppError && e.status < 500) return { type: 'refused', id, code: e.code, message: e.message, errors: e.opts.errors ?? null }
      return { type: 'error', id, message: e instanceof Error ? e.message : String(e) }
    }
    if (r.value.reused) return { type: 'reused', id, held: r.value.reused }
    const { contactId, event, events } = r.value
    // `events` ends with the tracked event; the ones before it are the subscription changes.
    const before = events.length > 1 ? events.slice(0, -1).map((e) => ({ id: e.id, name: e.name, data: e.data ?? {} })) : []
    return { type: 'ok', id, contactId, eventId: event.id, before, owed: owedToConsumers(event) }
  })
  port.postMessage({ type: 'committed', replies: encodeReplies(replies), stats: group.stats } satisfies FromWriter)
}
