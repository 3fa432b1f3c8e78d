import { badRequest } from '../errors'

/** The keyset position of a time-ordered list (events, activity): the last row's time and id. */
export interface TimeCursor { at: number; id: string }

/** Opaque to clients: base64url of `[at, id]`. */
export function encodeTimeCursor(a: TimeCursor): string {
  return Buffer.from(JSON.stringify([a.at, a.id])).toString('base64url')
}

export function decodeTimeCursor(text: string): TimeCursor {
  try {
    const [at, id] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[]
    if (typeof at === 'number' && Number.isFinite(at) && typeof id === 'string') return { at, id }
  } catch { /* fall through */ }
  throw badRequest('Invalid cursor: pass the cursor of a previous response unchanged')
}
