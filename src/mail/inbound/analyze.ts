/**
 * What an inbound message is, read once and before any database work: a bounce (DSN), a complaint
 * (ARF), ordinary mail (with the few fields email.received records), or unreadable. `inbound.process`
 * (src/modules/inbound/service.ts) calls parseInbound, then opens its transaction only for the writes.
 *
 * The parsers are linear in their input (mime.ts), but a 25 MB message still costs tens of
 * milliseconds: messages over INLINE_PARSE_BYTES are parsed in a worker thread of their own
 * (parse-worker.ts, an entry point of `npm run build`), so the main thread keeps serving HTTP and SMTP,
 * and a parse that still runs after PARSE_TIMEOUT_MS is abandoned (the thread is terminated) and the
 * message recorded as unreadable.
 */
import { classifyMime, type InboundClass } from './classify'
import { addresses, decodeWords, header, messageId, readableText, readMime, unreadable, type MimePart } from './mime'
import { storableCopy } from '../../storable'

/** The fields of an ordinary message that email.received records. */
export interface ReceivedSummary {
  /** Decoded, at most 998 characters. */
  subject: string | null
  from: string | null
  inReplyTo: string | null
  /** The last MAX_REFERENCES Message-IDs of References, oldest first. */
  references: string[]
  messageId: string | null
  autoSubmitted: boolean
  /** The start of the readable text, whitespace collapsed, at most 500 characters. */
  snippet: string
}

export type InboundAnalysis = Exclude<InboundClass, { kind: 'other' }> | { kind: 'other'; mail: ReceivedSummary }

/** References looked up for the replied-to email: the nearest ancestors are the last ones. */
export const MAX_REFERENCES = 20
/** Messages up to this size are parsed on the calling thread (about a millisecond); larger ones in a worker. */
export const INLINE_PARSE_BYTES = 256 * 1024
/** A parse in the worker that takes longer than this is abandoned. */
export const PARSE_TIMEOUT_MS = 30_000

function summary(root: MimePart): ReceivedSummary {
  const subject = header(root.headers, 'subject')
  const references = (header(root.headers, 'references') ?? '').match(/<[^<>\s]+>/g) ?? []
  return {
    subject: subject === null ? null : decodeWords(subject).slice(0, 998),
    from: addresses(header(root.headers, 'from'))[0] ?? null,
    inReplyTo: messageId(header(root.headers, 'in-reply-to')),
    references: references.slice(-MAX_REFERENCES),
    messageId: messageId(header(root.headers, 'message-id')),
    autoSubmitted: (header(root.headers, 'auto-submitted') ?? 'no').toLowerCase() !== 'no',
    snippet: readableText(root).replace(/\s+/g, ' ').trim().slice(0, 500),
  }
}

/**
 * Classifies and reads a raw inbound message on the calling thread, parsing it once. Pure; never throws.
 * What it reads is made storable (src/storable.ts): a NUL or a lone surrogate (from UTF-16) in a subject
 * or a report's field becomes U+FFFD, the same on both stores, instead of an event PostgreSQL refuses
 * (the message was answered 250 before it was parsed; its raw bytes are kept as they came).
 */
export function analyzeInbound(input: Buffer | Uint8Array): InboundAnalysis {
  return storableCopy(analyze(input))
}

function analyze(input: Buffer | Uint8Array): InboundAnalysis {
  const root = readMime(Buffer.isBuffer(input) ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength))
  if ('kind' in root) return root
  const cls = classifyMime(root)
  if (cls.kind !== 'other') return cls
  try {
    return { kind: 'other', mail: summary(root) }
  } catch (err) {
    return unreadable(err)
  }
}

/**
 * The worker's module: next to this file from source; in the executable (`npm run build` lists it as an
 * entry point) by its path from the project root, as for the signer (src/mail/signer.ts).
 */
const WORKER_ENTRY = import.meta.url.includes('/$bunfs/')
  ? './src/mail/inbound/parse-worker.ts'
  : new URL('./parse-worker.ts', import.meta.url).href

export interface ParseOptions {
  inlineBytes?: number
  timeoutMs?: number
}

/**
 * Classifies and reads a raw inbound message: inline when small, else in a worker thread started for it
 * (large messages are rare; the thread costs about 10 ms of CPU to start and ends with the parse).
 * Rejects when the worker fails or outlives `timeoutMs`: the job then retries (a busy machine may be slow
 * once), and records the message as failed, with the reason, only after its last attempt.
 */
export function parseInbound(raw: Buffer, opts: ParseOptions = {}): Promise<InboundAnalysis> {
  if (raw.length <= (opts.inlineBytes ?? INLINE_PARSE_BYTES)) return Promise.resolve(analyzeInbound(raw))
  const timeoutMs = opts.timeoutMs ?? PARSE_TIMEOUT_MS
  return new Promise<InboundAnalysis>((resolve, reject) => {
    const worker = new Worker(WORKER_ENTRY)
    const done = (fn: () => void) => {
      clearTimeout(timer)
      worker.terminate()
      fn()
    }
    const timer = setTimeout(() => done(() => reject(new Error(
      `parsing took longer than ${timeoutMs / 1000} s and was abandoned (${raw.length} bytes)`,
    ))), timeoutMs)
    worker.onmessage = (event: MessageEvent<InboundAnalysis>) => done(() => resolve(event.data))
    worker.onerror = (event) => done(() => reject(new Error(`inbound parse worker failed: ${event.message}`)))
    // A copy of exactly the message, transferred (the row's buffer may be a view of a larger one).
    const copy = new Uint8Array(raw.length)
    copy.set(raw)
    worker.postMessage(copy, [copy.buffer])
  })
}
