import type { Db } from '../../db/client'
import type { Batched } from '../../db/group-commit'
import { normalizeEmail, RESERVED_DATA_KEYS, type ContactData } from '../contacts/data'
import { upsertIn, upsertManyUnsaved, type WriteCtx } from '../contacts/service'
import { claimIn, type Claim, type HeldKey } from '../idempotency/repo'
import { appendEvents, type EventRow, type NewEvent } from './stream'
import { confirmKeys, StaleKeyError, type KeyConfirm } from '../projects/service'

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
  /** The API key answered from memory, confirmed in the same transaction (StaleKeyError when it is not). */
  confirm?: KeyConfirm | null
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
  // Sent first, awaited last: the check shares the write's round trips. Failed, it fails the write (its savepoint).
  if (!t.confirm) return writeTrackUnconfirmed(ctx, db, t)
  const key = t.confirm
  const confirmed = confirmKeys(ctx.store, db, [key])
  confirmed.catch(() => {})
  let out: TrackOutcome | TrackReused
  try {
    out = await writeTrackUnconfirmed(ctx, db, t)
  } catch (err) {
    // A stale key's error is its staleness, whatever the write hit (a data limit must not answer a revoked
    // key); a check that failed too leaves the key unconfirmed: recordTrack looks it up afresh.
    if (!(await confirmed.catch(() => [false]))[0]) throw new StaleKeyError(key)
    throw err
  }
  if (!(await confirmed)[0]) throw new StaleKeyError(key)
  return out
}

async function writeTrackUnconfirmed(ctx: WriteCtx, db: Db, t: TrackWrite): Promise<TrackOutcome | TrackReused> {
  if (t.claim) {
    const held = await claimIn(ctx.store, db, t.claim, 200)
    if (held) return { reused: held }
  }
  const up = await upsertIn(ctx, db, { email: t.email, subscribed: t.subscribed, data: t.data, dataChecked: true }, { defaultSubscribed: true })
  const [event] = await appendEvents(ctx, db, [{ contactId: up.contact.id, name: t.event, data: eventData(t.data) }])
  return { contactId: up.contact.id, event, events: up.events.length ? [...up.events, event] : [event] }
}

/** One track of a batch (trackBatch): its context and its write. */
export interface TrackJob { ctx: WriteCtx; write: TrackWrite }

/**
 * Tracks as one kind of group-committed write (db/group-commit.ts, runMany): the tracks of a batch are
 * written with a few statements for all of them — per project, one insert of the new contacts with one
 * read of all of them, then one update of the changed ones sent with one insert of all the events
 * (contacts/service.ts, upsertManyUnsaved): on PostgreSQL two round trips and the commit, instead of a few
 * per track. A contact named twice in a batch is upserted in a second round, after the first. A track with
 * an Idempotency-Key, and any track when something fails (a data limit, a conflict, a stale key), is
 * written alone by writeTrack, as `one` (the batch then runs again, each in a savepoint). The API keys
 * answered from memory (TrackWrite.confirm) are confirmed with one statement for the batch, sent with its
 * first ones.
 */
export const trackBatch: Batched<TrackJob, TrackOutcome | TrackReused> = {
  one: (db, job) => writeTrack(job.ctx, db, job.write),
  async many(db, jobs) {
    const out: Array<TrackOutcome | TrackReused> = new Array(jobs.length)
    // The keys answered from memory, confirmed with one statement sent first and awaited last (see writeTrack).
    const checks: KeyConfirm[] = []
    for (const j of jobs) if (j.write.confirm) checks.push(j.write.confirm)
    const confirmed = checks.length ? confirmKeys(jobs[0].ctx.store, db, checks) : null
    confirmed?.catch(() => {})
    // Rounds of distinct (project, email), grouped by project: the keys are `${round} ${projectId}`.
    const seen = new Map<string, number>()
    const groups = new Map<string, number[]>()
    for (let i = 0; i < jobs.length; i++) {
      const { ctx, write } = jobs[i]
      if (write.claim) { out[i] = await writeTrackUnconfirmed(ctx, db, write); continue }
      const who = `${ctx.projectId} ${normalizeEmail(write.email)}`
      const round = seen.get(who) ?? 0
      seen.set(who, round + 1)
      const key = `${round} ${ctx.projectId}`
      const list = groups.get(key)
      if (list) list.push(i)
      else groups.set(key, [i])
    }
    /** Per project: its tracks and the events to append, each track's subscription event (if any) before its own. */
    const tracked = new Map<string, { ctx: WriteCtx; indexes: number[]; flipped: boolean[]; events: NewEvent[] }>()
    const contactOf: string[] = new Array(jobs.length)
    const saves: Promise<void>[] = []
    // By round, then by project: two batches lock the contacts of their projects in the same order (no deadlock).
    const roundOf = (key: string) => Number(key.slice(0, key.indexOf(' ')))
    const rounds = [...groups.entries()].sort((a, b) => roundOf(a[0]) - roundOf(b[0]) || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    for (const [, indexes] of rounds) {
      const ctx = jobs[indexes[0]].ctx
      const inputs = indexes.map((i) => ({ email: jobs[i].write.email, subscribed: jobs[i].write.subscribed, data: jobs[i].write.data, dataChecked: true }))
      // A later round's read is sent after this round's update, on the same connection: it sees it.
      const up = await upsertManyUnsaved(ctx, db, inputs, { defaultSubscribed: true })
      saves.push(up.saved)
      let t = tracked.get(ctx.projectId)
      if (!t) { t = { ctx, indexes: [], flipped: [], events: [] }; tracked.set(ctx.projectId, t) }
      for (let k = 0; k < indexes.length; k++) {
        const i = indexes[k]
        // A refused input (a data limit): the batch runs again the safe way, where it fails alone.
        if (up.refused[k] !== undefined) throw new Error(`track refused: ${up.refused[k]}`)
        const contactId = up.contacts[k].id
        contactOf[i] = contactId
        const flip = up.flips[k]
        t.indexes.push(i)
        t.flipped.push(flip !== undefined)
        if (flip) t.events.push({ ...flip, createdAt: jobs[i].ctx.now })
        t.events.push({ contactId, name: jobs[i].write.event, data: eventData(jobs[i].write.data), createdAt: jobs[i].ctx.now })
      }
    }
    const appended = [...tracked.values()].map(async (t) => {
      const rows = await appendEvents(t.ctx, db, t.events)
      let r = 0
      for (let k = 0; k < t.indexes.length; k++) {
        const i = t.indexes[k]
        const before = t.flipped[k] ? [rows[r++]] : []
        const event = rows[r++]
        out[i] = { contactId: contactOf[i], event, events: before.length ? [...before, event] : [event] }
      }
    })
    await Promise.all([...saves, ...appended])
    if (confirmed) {
      // One stale key rolls the batch back; run again each in its savepoint, only its own write fails.
      const stale = (await confirmed).indexOf(false)
      if (stale >= 0) throw new StaleKeyError(checks[stale])
    }
    return out
  },
}
