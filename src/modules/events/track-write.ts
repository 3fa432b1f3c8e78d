import type { Db } from '../../db/client'
import { RESERVED_DATA_KEYS, type ContactData } from '../contacts/data'
import { upsertIn, type WriteCtx } from '../contacts/service'
import { claimIn, type Claim, type HeldKey } from '../idempotency/repo'
import { appendEvents, type EventRow } from './stream'

/**
 * The write of one track inside a transaction: upsert the contact, append the event. It only reads and
 * writes through `db` (a pure write for group commit) and needs no more of the context than `WriteCtx`,
 * so it runs the same on the main thread and on the track writer thread (writer.ts).
 */

export interface TrackWrite {
  email: string
  event: string
  subscribed?: boolean
  data?: ContactData | null
  /** The Idempotency-Key to claim in the same transaction (see idempotency/service.ts). */
  claim?: Claim | null
}

export interface TrackOutcome { reused?: undefined; contactId: string; event: EventRow; events: EventRow[] }
/** The Idempotency-Key was held already: nothing was written. */
export interface TrackReused { reused: HeldKey }

/**
 * The event's own data: the request's data with reserved keys dropped and `{value, persistent}` wrappers
 * unwrapped (non-persistent values are kept on the event, not on the contact, so that a workflow the
 * event triggers can use them).
 */
export function eventData(data: ContactData | null | undefined): Record<string, unknown> {
  if (!data) return {}
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(data)) {
    if (RESERVED_DATA_KEYS.has(key) || key === '__proto__') continue
    const v = data[key]
    if (v === undefined) continue
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && 'value' in v && typeof (v as { persistent?: unknown }).persistent === 'boolean' && Object.keys(v).length === 2) {
      out[key] = (v as { value: unknown }).value
    } else out[key] = v
  }
  return out
}

/**
 * Claims the Idempotency-Key if any (its row records status 200: it commits only with the work), upserts
 * the contact (new contacts subscribed unless `subscribed: false`) and appends the event, in `db`.
 * `t.data` has passed `checkDataLimits` (recordTrack checks it); the contact's size after the change is
 * checked here.
 */
export async function writeTrack(ctx: WriteCtx, db: Db, t: TrackWrite): Promise<TrackOutcome | TrackReused> {
  if (t.claim) {
    const held = await claimIn(ctx.store, db, t.claim, 200)
    if (held) return { reused: held }
  }
  const up = await upsertIn(ctx, db, { email: t.email, subscribed: t.subscribed, data: t.data, dataChecked: true }, { defaultSubscribed: true })
  const [event] = await appendEvents(ctx, db, [{ contactId: up.contact.id, name: t.event, data: eventData(t.data) }])
  return { contactId: up.contact.id, event, events: up.events.length ? [...up.events, event] : [event] }
}
