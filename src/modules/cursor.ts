import { badRequest } from '../errors'
import { isStorableText, isStorableTime } from '../storable'

/** The keyset position of a time-ordered list (events, activity): the last row's time and id. */
export interface TimeCursor { at: number; id: string }

/** Opaque to clients: base64url of `[at, id]`. */
export function encodeTimeCursor(a: TimeCursor): string {
  return Buffer.from(JSON.stringify([a.at, a.id])).toString('base64url')
}

/**
 * A cursor comes back from the client: one it made up may carry what no response gave (a time outside
 * what the stores hold, a NUL in the id), refused like any other forged cursor instead of reaching a query.
 */
export function decodeTimeCursor(text: string): TimeCursor {
  try {
    const [at, id] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[]
    if (typeof at === 'number' && isStorableTime(at) && typeof id === 'string' && isStorableText(id)) return { at, id }
  } catch { /* fall through */ }
  throw invalidCursor()
}

export function invalidCursor() {
  return badRequest('Invalid cursor: pass the cursor of a previous response unchanged')
}
