import type { Config } from '../config'
import { tooLarge } from '../errors'
import { MAX_IMPORT_BYTES } from '../modules/contacts/import'

/**
 * Request body caps, by route (README, Request bodies). Every route that reads a body has one; a route that
 * takes none never reads it. The cap is checked twice: against a declared Content-Length before anything
 * is read, and while the body is read (a chunked body has no declared length), so no body is ever held
 * beyond its route's cap. MAILCTL_MAX_BODY_BYTES bounds every cap.
 */
export const DEFAULT_BODY_CAP = 1024 * 1024
/** Templates and campaigns: a 500,000-character HTML body, A/B variants and the visual editor's design. */
export const CONTENT_BODY_CAP = 8 * 1024 * 1024
/** What a route that takes no body accepts as a declared length (the body itself is never read). */
export const NO_BODY_CAP = 64 * 1024
/** The multipart envelope around an uploaded file. */
const MULTIPART_ROOM = 64 * 1024

/**
 * Parse hooks that read no body (the cap itself, the auth guard's check of the key): a route counts as
 * taking a body by its schema or by a parser that is not one of these. A mark on functions, not state.
 */
const readNothing = new WeakSet<object>()
export function readsNothing<F extends object>(fn: F): F {
  readNothing.add(fn)
  return fn
}

/** Whether a route's parse hooks (Elysia's `hooks.parse`) include one that reads the body. */
export function hasOwnParser(parse: unknown): boolean {
  const list = Array.isArray(parse) ? parse : parse ? [parse] : []
  return list.some((p) => {
    const fn = typeof p === 'object' && p !== null && 'fn' in p ? (p as { fn: unknown }).fn : p
    return !(typeof fn === 'function' && readNothing.has(fn))
  })
}

/**
 * A failure of a hook that runs among the parsers but is not about the body (the key check reading the
 * store): Elysia reports anything thrown there as a parse error, so it travels in this wrapper and app.ts's
 * onError answers for the error inside (a 503 for the store, a 500 for a bug), never "malformed body".
 */
export class NotABodyError extends Error {
  constructor(readonly inner: unknown) {
    super('a failure before the body was read')
  }
}

/** The caps that differ from DEFAULT_BODY_CAP, by "METHOD /route pattern". */
export function bodyCaps(config: Config): Record<string, number> {
  return {
    'POST /v1/send': config.maxBodyBytes,
    'POST /contacts/import': MAX_IMPORT_BYTES + MULTIPART_ROOM,
    'POST /uploads/image': config.uploadMaxBytes + MULTIPART_ROOM,
    'POST /templates': CONTENT_BODY_CAP,
    'PATCH /templates/:id': CONTENT_BODY_CAP,
    'POST /campaigns': CONTENT_BODY_CAP,
    'PUT /campaigns/:id': CONTENT_BODY_CAP,
  }
}

/** The cap of one route: `takesBody` says whether it declares a body (a schema or its own parser). */
export function bodyCap(config: Config, caps: Record<string, number>, method: string, route: string, takesBody: boolean): number {
  const cap = takesBody ? (caps[`${method} ${route}`] ?? DEFAULT_BODY_CAP) : NO_BODY_CAP
  return Math.min(cap, config.maxBodyBytes)
}

/** What the caps of a few routes stand for, said in their 413. */
const NOTES: Record<string, (config: Config) => string> = {
  'POST /contacts/import': () => 'CSV imports are limited to 5 MB',
  'POST /uploads/image': (config) => `images are limited to ${config.uploadMaxBytes} bytes`,
}

/** The 413 of a body over its route's cap. */
export function overCap(config: Config, cap: number, method: string, route: string, declared?: string) {
  const note = NOTES[`${method} ${route}`]
  return tooLarge(`${declared ? `Request body of ${declared} bytes` : 'The request body'} exceeds the limit of ${cap} bytes for ${method} ${route}${note ? ` (${note(config)})` : ''}`)
}

/**
 * The request with its body stream cut at `cap` bytes: reading past it fails with a 413. Nothing is read
 * here; whoever parses the body later reads through the cap.
 */
export function capBody(request: Request, cap: number, tooBig: () => Error): Request {
  const source = request.body
  if (!source) return request
  const reader = source.getReader()
  let seen = 0
  const body = new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      const { done, value } = await reader.read()
      if (done) return ctrl.close()
      seen += value.byteLength
      if (seen > cap) {
        await reader.cancel().catch(() => {})
        ctrl.error(tooBig())
        return
      }
      ctrl.enqueue(value)
    },
    cancel(reason) { return reader.cancel(reason) },
  }, { highWaterMark: 0 })
  return new Request(request.url, { method: request.method, headers: request.headers, body, duplex: 'half', signal: request.signal } as RequestInit)
}
