import { type AppError, badRequest } from '../errors'
import { isStorableText, UNSTORABLE, unstorableInput } from '../storable'

// Text PostgreSQL cannot store (src/storable.ts), refused before any query on every route (src/http/app.ts).

/**
 * The error for a request whose URL or body carries unstorable text (null when it has none): 400
 * BAD_REQUEST for the path or the query string (as for any invalid parameter), 422 VALIDATION_ERROR naming
 * the field for a body. A URL whose percent-encoding is not UTF-8 (how a lone surrogate arrives there) is
 * refused the same way.
 */
export function unstorableRequest(url: string, body: unknown): AppError | null {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const target = start < 0 ? '' : url.slice(start)
  if (target.includes('%')) {
    const q = target.indexOf('?')
    if (!storableEncoded(q < 0 ? target : target.slice(0, q))) return badRequest(`The request's path ${UNSTORABLE}`)
    if (q >= 0 && !storableEncoded(target.slice(q + 1))) return badRequest(`The request's query string ${UNSTORABLE}`)
  }
  if (body === undefined || body === null) return null
  return unstorableInput(body)
}

/** Whether every run of %XX escapes in `raw` decodes to storable UTF-8 text (a lone "%" is left alone). */
function storableEncoded(raw: string): boolean {
  for (const run of raw.match(/(?:%[0-9a-fA-F]{2})+/g) ?? []) {
    let text: string
    try { text = decodeURIComponent(run) } catch { return false }
    if (!isStorableText(text)) return false
  }
  return true
}
