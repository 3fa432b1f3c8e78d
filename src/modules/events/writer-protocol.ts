import type { ErrorCode, FieldError } from '../../errors'
import type { ContactData } from '../contacts/data'
import type { Claim, HeldKey } from '../idempotency/repo'
import type { OutboxRow } from './repo'

/**
 * The messages between the track writer (writer.ts, main thread) and its threads (writer-worker.ts). Both
 * sides import this module and not each other: importing writer-worker.ts would run a thread's code.
 *
 * A batch crosses as the UTF-8 JSON of its items in an ArrayBuffer that is transferred, not copied
 * (a string is copied under the port's lock); replies cross as one JSON string. JSON is cheaper to hand
 * between threads than structured-cloned objects.
 */

/** One track to write. `id` pairs the reply with the caller; all its events are created at `nowMs`. */
export interface TrackItem {
  id: number
  projectId: string
  nowMs: number
  email: string
  event: string
  subscribed: boolean | null
  data: ContactData | null
  claim: Claim | null
}

/** An event the thread appended before the tracked one (a subscription change), created at its item's time. */
export interface EarlierEvent { id: string; name: string; data: Record<string, unknown> }

/** The outcome of one item, once its batch has committed (or failed). */
export type TrackReply =
  /** `owed`: its events went to the outbox (false: no consumer of the project could react, outbox.ts). */
  | { type: 'ok'; id: number; contactId: string; eventId: string; before: EarlierEvent[]; owed: boolean }
  | { type: 'reused'; id: number; held: HeldKey }
  /** A 4xx the main thread throws as is (a contact's data growing past its limit is only known here). */
  | { type: 'refused'; id: number; code: ErrorCode; message: string; errors: FieldError[] | null }
  | { type: 'error'; id: number; message: string }

export interface WriterStats { batches: number; writes: number; retries: number }

/** From the main thread to a thread: `init` first (on the worker), then the others on the port it gives. */
export type ToThread =
  | { type: 'init'; role: 'writer'; url: string; synchronous: 'FULL' | 'NORMAL'; port: MessagePort }
  | { type: 'init'; role: 'checkpointer'; url: string; port: MessagePort }
  /**
   * encodeBatch's buffer, in the transfer list; `interests`: the registered consumers' interests
   * (events/interest.ts) when they changed since the last batch, so that the thread decides "owed" as the
   * main thread would (the thread has no consumers of its own).
   */
  | { type: 'batch'; items: ArrayBuffer; interests?: string[] }
  /**
   * An outbox drainer's claim and settlement (outbox.ts, RoutedClaim), carried by the thread's next commit;
   * answered with an `outbox` message of the same id once it has committed.
   */
  | { type: 'outbox'; id: number; holder: string; nowMs: number; untilMs: number; maxRows: number; candidates: string[]; settle: string[] }
  /** Close the connections and end the thread. */
  | { type: 'close' }

/**
 * From the writer thread: once a batch has committed, decodeReplies(replies) and the thread's counters;
 * once an outbox claim has committed, the rows it claimed (structured-cloned: a few a second), or why it failed.
 */
export type FromWriter =
  | { type: 'committed'; replies: string; stats: WriterStats }
  | { type: 'outbox'; id: number; rows: OutboxRow[] | null; error: string | null }

/** The batch as a buffer of its own, to transfer. */
export function encodeBatch(items: TrackItem[]): ArrayBuffer {
  const bytes = Buffer.from(JSON.stringify(items))
  // A Buffer may be a view into a larger, shared pool (Node pools small ones): then transfer a copy of its
  // bytes, never the pool. (Buffer.from of a string is never a SharedArrayBuffer: hence the casts.)
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? (bytes.buffer as ArrayBuffer)
    : (bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
}

export function decodeBatch(buffer: ArrayBuffer): TrackItem[] {
  return JSON.parse(Buffer.from(buffer).toString()) as TrackItem[]
}

export function encodeReplies(replies: TrackReply[]): string {
  return JSON.stringify(replies)
}

export function decodeReplies(text: string): TrackReply[] {
  return JSON.parse(text) as TrackReply[]
}
