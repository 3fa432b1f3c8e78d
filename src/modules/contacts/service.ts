import type { Db, Store } from '../../db/client'
import { conflictAnswer, isRetryableConflict, LostRaceError } from '../../db/group-commit'
import type { Ctx } from '../../deps'
import { AppError, conflict, flatError, notFound } from '../../errors'
import { invalidCursor } from '../cursor'
import { isStorableText, isStorableTime } from '../../storable'
import { appendEvents, notifyEvents, type EventRow, type NewEvent } from '../events/stream'
import { applyDataRules, isDataLimitError, normalizeEmail, type ContactData } from './data'
import type { ListContactsQuery } from './model'
import * as repo from './repo/contact'
import * as listRepo from './repo/list'
import type { ContactRow } from './repo/rows'

export type { ContactRow } from './repo/rows'

export interface UpsertInput {
  email: string
  /** Given: the contact's state becomes this (emitting an event when it changes). Omitted: new contacts get `defaultSubscribed`, existing keep theirs. */
  subscribed?: boolean
  data?: ContactData | null
  /** `data` passed `checkDataLimits` already (track checks before handing the write to its thread). */
  dataChecked?: boolean
}

export interface UpsertOptions {
  /** The state of a contact created without `subscribed` (true for POST /contacts, track and send). */
  defaultSubscribed: boolean
  /** Run inside this transaction; the caller then commits and calls `notifyEvents(ctx, result.events)`. */
  db?: Db
}

export interface UpsertResult {
  contact: ContactRow
  isNew: boolean
  /** True when the email matched an existing contact. */
  isUpdate: boolean
  /** The stored data plus this request's `{value, persistent: false}` values: what templates see. */
  templateData: ContactData
  /** contact.subscribed / contact.unsubscribed rows appended in the transaction (at most one). */
  events: EventRow[]
}

export function subscriptionEvent(contactId: string, subscribed: boolean): NewEvent {
  return { contactId, name: subscribed ? 'contact.subscribed' : 'contact.unsubscribed', data: { subscribed } }
}

/** What changes on an existing contact for `input` (null: nothing). */
function planUpdate(existing: ContactRow, input: UpsertInput): { set: repo.ContactSet; flip: boolean; templateData: ContactData } {
  const patch = applyDataRules(existing.data ?? {}, input.data, input.dataChecked)
  const flip = input.subscribed !== undefined && input.subscribed !== existing.subscribed
  const set: repo.ContactSet = {}
  if (patch.changed) set.data = patch.data
  if (flip) set.subscribed = input.subscribed
  return { set, flip, templateData: patch.templateData }
}

/**
 * What a write inside a transaction needs of the context: the store, the project and the request time.
 * The track writer thread (src/modules/events/writer.ts) has only these.
 */
export type WriteCtx = Pick<Ctx, 'store' | 'projectId' | 'now'>

function newRow(ctx: WriteCtx, email: string, input: UpsertInput, opts: Pick<UpsertOptions, 'defaultSubscribed'>, now: Date) {
  const patch = applyDataRules({}, input.data, input.dataChecked)
  const row: ContactRow = {
    id: Bun.randomUUIDv7(), projectId: ctx.projectId, email, subscribed: input.subscribed ?? opts.defaultSubscribed,
    data: patch.data, createdAt: now, updatedAt: now,
  }
  return { row, templateData: patch.templateData }
}

/**
 * A contact that another writer deleted while an upsert was between its insert and its read (PostgreSQL):
 * neither inserted nor found. The upsert's transaction (or savepoint) must roll back; run again, it
 * creates the contact anew (the delete came first). Group-committed writes (sends, tracks) run again as
 * after a deadlock (a LostRaceError); a write in a transaction of its own (POST /contacts, a CSV import's
 * batch, a relayed message, a static segment's new members) runs again with againIfVanished, at most 3
 * runs. Vanished on every run, it answers 409 (an SMTP client of the relay gets a 451).
 */
export class ContactVanishedError extends LostRaceError {
  constructor(readonly email: string) {
    super(`The contact ${email} was deleted by another request while it was written; send the request again`)
  }
}

/** Runs of a write whose contact vanished (ContactVanishedError) before it gives up. */
const VANISHED_RUNS = 3

/**
 * Runs `write` (a transaction of its own on `store`) again when it lost a race with other writers (a
 * LostRaceError: a contact it upserts vanished mid-way, say) or hit a deadlock or a serialization failure
 * (PostgreSQL; isRetryableConflict): rolled back whole, the next run finds the contact gone and creates it
 * anew. Any other error, or a third loss, is thrown. Inside a transaction of `store` already, `write`
 * joins it and runs once: only the outer transaction's owner can run it again.
 */
export async function againIfVanished<T>(store: Store, write: () => Promise<T>, runs = VANISHED_RUNS): Promise<T> {
  if (store.inTransaction) return write()
  for (let run = 1; ; run++) {
    try {
      return await write()
    } catch (err) {
      if (!isRetryableConflict(err)) throw err
      if (run >= runs) throw conflictAnswer(err)
    }
  }
}

/** `upsertContact` inside the caller's transaction `db` (the caller notifies listeners after commit). */
export async function upsertIn(ctx: WriteCtx, db: Db, input: UpsertInput, opts: Pick<UpsertOptions, 'defaultSubscribed'>): Promise<UpsertResult> {
  const email = normalizeEmail(input.email)
  const { store, projectId } = ctx
  let existing = await repo.findByEmailForUpdate(store, db, projectId, email)
  if (!existing) {
    const { row, templateData } = newRow(ctx, email, input, opts, new Date())
    const inserted = await repo.insertIfAbsent(store, db, row)
    if (inserted) return { contact: inserted, isNew: true, isUpdate: false, templateData, events: [] }
    // Another transaction created it between our read and insert (PostgreSQL): update it instead.
    existing = await repo.findByEmailForUpdate(store, db, projectId, email)
    if (!existing) throw new ContactVanishedError(email)
  }
  const { set, flip, templateData } = planUpdate(existing, input)
  if (!set.data && !flip) return { contact: existing, isNew: false, isUpdate: true, templateData, events: [] }
  const contact: ContactRow = { ...existing, ...set, updatedAt: new Date() }
  await repo.saveState(store, db, contact)
  const events = flip ? await appendEvents(ctx, db, [subscriptionEvent(existing.id, contact.subscribed)]) : []
  return { contact, isNew: false, isUpdate: true, templateData, events }
}

/**
 * Creates or updates the contact of `input.email` (trimmed, lower-cased) by the five data rules, and
 * emits contact.subscribed / contact.unsubscribed once per real change of state. Concurrency-safe:
 * two upserts of one new email settle on the unique (project, email) index.
 *
 * With `opts.db` it runs inside the caller's transaction and leaves `notifyEvents` to the caller;
 * otherwise it opens its own transaction and notifies after commit.
 */
export async function upsertContact(ctx: Ctx, input: UpsertInput, opts: UpsertOptions): Promise<UpsertResult> {
  if (opts.db) return upsertIn(ctx, opts.db, input, opts)
  const result = await againIfVanished(ctx.store, () => ctx.store.tx((db) => upsertIn(ctx, db, input, opts)))
  await notifyEvents(ctx, result.events)
  return result
}

export type UpsertOutcome = 'created' | 'updated' | 'unchanged' | 'refused'

/**
 * `upsertContact` for many inputs inside the caller's transaction, with a few statements per batch
 * instead of per contact (CSV import, campaign audiences). Emails must be distinct within one call.
 * Returns one outcome per input, in order, and the subscription events appended (notify after commit).
 * An input whose data breaks a limit (contacts/data.ts) is 'refused', with the message in `refused`, and
 * writes nothing; the others go on.
 */
export async function upsertMany(ctx: WriteCtx, db: Db, inputs: UpsertInput[], opts: { defaultSubscribed: boolean }): Promise<{ outcomes: UpsertOutcome[]; refused: Array<string | undefined>; contacts: ContactRow[]; events: EventRow[] }> {
  const planned = await upsertManyUnsaved(ctx, db, inputs, opts)
  const [, events] = await Promise.all([planned.saved, appendEvents(ctx, db, planned.flips.filter((e): e is NewEvent => e !== undefined))])
  return { outcomes: planned.outcomes, refused: planned.refused, contacts: planned.contacts, events }
}

/** `upsertMany` up to its last writes, which the caller awaits together with its own (see upsertManyUnsaved). */
export interface UpsertManyUnsaved {
  outcomes: UpsertOutcome[]
  refused: Array<string | undefined>
  contacts: ContactRow[]
  /** Each input's subscription event (contact.subscribed / contact.unsubscribed), not yet appended. */
  flips: Array<NewEvent | undefined>
  /** The update of the changed contacts, already sent on `db`: await it before the transaction commits. */
  saved: Promise<void>
}

/**
 * `upsertMany` without its last round trip: the update of the changed contacts is sent but not awaited,
 * and the subscription events are left to the caller, so that a caller with more to write (track: its
 * events) sends it all together, on PostgreSQL in one round trip.
 *
 * The new contacts are inserted first and then every contact of the batch is read (on PostgreSQL locked),
 * the two sent together (one round trip on PostgreSQL). Statements on one connection run in the order they
 * were sent, so the read sees a contact that another writer committed while our insert waited for it (the
 * insert skipped it): that contact is updated like the others. Inserting before knowing which contacts exist
 * costs a look-up of the unique index for each existing one, less than the round trip it saves.
 */
export async function upsertManyUnsaved(ctx: WriteCtx, db: Db, inputs: UpsertInput[], opts: { defaultSubscribed: boolean }): Promise<UpsertManyUnsaved> {
  const { store, projectId } = ctx
  const emails = inputs.map((i) => normalizeEmail(i.email))
  const now = new Date()
  const outcomes: UpsertOutcome[] = new Array(inputs.length)
  const refused: Array<string | undefined> = new Array(inputs.length)
  const contacts: ContactRow[] = new Array(inputs.length)
  const refuse = (index: number, err: unknown) => {
    if (!isDataLimitError(err)) throw err
    outcomes[index] = 'refused'
    refused[index] = err.message
  }
  // A new row for every input (those whose contact exists are skipped by the insert); a new contact's
  // data that breaks a limit is refused only if the contact turns out not to exist.
  const candidates: Array<{ index: number; row: ContactRow }> = []
  const unfit = new Map<number, unknown>()
  inputs.forEach((input, index) => {
    try { candidates.push({ index, row: newRow(ctx, emails[index], input, { ...opts }, now).row }) } catch (err) {
      if (!isDataLimitError(err)) throw err
      unfit.set(index, err)
    }
  })
  const [insertedRows, found] = await Promise.all([
    repo.insertManyIfAbsent(store, db, candidates.map((c) => c.row)),
    repo.findByEmailsForUpdate(store, db, projectId, emails),
  ])
  const inserted = new Set(insertedRows.map((r) => r.email))
  for (const c of candidates) {
    if (inserted.has(c.row.email)) { outcomes[c.index] = 'created'; contacts[c.index] = c.row }
  }
  const existing = new Map<string, ContactRow>()
  for (const r of found) if (!inserted.has(r.email)) existing.set(r.email, r)
  const flips: Array<NewEvent | undefined> = new Array(inputs.length)
  const changed: ContactRow[] = []
  /** The update of `i`, whose contact exists (in `existing`): its outcome, and the row to save. */
  const plan = (i: number) => {
    const row = existing.get(emails[i]) as ContactRow
    let p: ReturnType<typeof planUpdate>
    try { p = planUpdate(row, inputs[i]) } catch (err) { refuse(i, err); return }
    const { set, flip } = p
    if (!set.data && !flip) { outcomes[i] = 'unchanged'; contacts[i] = row; return }
    const next: ContactRow = { ...row, ...set, updatedAt: now }
    changed.push(next)
    contacts[i] = next
    outcomes[i] = 'updated'
    if (flip) flips[i] = subscriptionEvent(row.id, next.subscribed)
  }
  const missing: number[] = []
  for (let i = 0; i < inputs.length; i++) {
    if (outcomes[i] !== undefined) continue
    if (existing.has(emails[i])) plan(i)
    else if (unfit.has(i)) refuse(i, unfit.get(i))
    else missing.push(i)
  }
  if (missing.length) {
    // Neither inserted nor found: deleted by another writer between the two (PostgreSQL). Read once more;
    // still absent, the caller's batch fails and runs again the safe way.
    for (const r of await repo.findByEmailsForUpdate(store, db, projectId, missing.map((i) => emails[i]))) existing.set(r.email, r)
    for (const i of missing) {
      if (!existing.has(emails[i])) throw new ContactVanishedError(emails[i])
      plan(i)
    }
  }
  const saved = repo.saveStates(store, db, changed)
  // Awaited by the caller; until then a rejection is not unhandled.
  saved.catch(() => {})
  return { outcomes, refused, contacts, flips, saved }
}

// ---------------------------------------------------------------------------------------------------
// The verbs of the /contacts endpoints

export interface ContactOut {
  id: string
  email: string
  subscribed: boolean
  data: Record<string, unknown>
  createdAt: string
  updatedAt: string
}

export function toContact(row: ContactRow): ContactOut {
  return {
    id: row.id, email: row.email, subscribed: row.subscribed, data: row.data ?? {},
    createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString(),
  }
}

/** POST /contacts: upsert by email; new contacts are subscribed unless told otherwise. */
export async function createContact(ctx: Ctx, body: { email?: string; subscribed?: boolean; data?: ContactData | null } | null | undefined) {
  if (!body?.email) throw flatError('Email is required')
  // Deleted under it on each of its runs, it answers 409 (ContactVanishedError).
  const r = await upsertContact(ctx, { email: body.email, subscribed: body.subscribed, data: body.data }, { defaultSubscribed: true })
  return { ...toContact(r.contact), _meta: { isNew: r.isNew, isUpdate: r.isUpdate } }
}

export async function getContact(ctx: Ctx, id: string): Promise<ContactOut> {
  const row = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  if (!row) throw notFound('contact')
  return toContact(row)
}

/** PATCH /contacts/:id: email (409 when another contact uses it), subscribed (emits on a flip), data by the rules. */
export async function updateContact(ctx: Ctx, id: string, body: { email?: string; subscribed?: boolean; data?: ContactData | null }): Promise<ContactOut> {
  const emailTaken = () => conflict('Another contact in this project already uses this email', { field: 'email' })
  let result: { contact: ContactRow; events: EventRow[] }
  try {
    result = await ctx.store.tx(async (db) => {
      const row = await repo.findById(ctx.store, db, ctx.projectId, id, true)
      if (!row) throw notFound('contact')
      const { set, flip } = planUpdate(row, { email: row.email, subscribed: body.subscribed, data: body.data })
      if (body.email !== undefined) {
        const email = normalizeEmail(body.email)
        if (email !== row.email) {
          const other = await repo.findByEmailForUpdate(ctx.store, db, ctx.projectId, email)
          if (other) throw emailTaken()
          set.email = email
        }
      }
      if (!set.data && !flip && !set.email) return { contact: row, events: [] }
      set.updatedAt = new Date()
      const contact = await repo.updateById(ctx.store, db, ctx.projectId, row.id, set)
      if (!contact) throw notFound('contact')
      const events = flip ? await appendEvents(ctx, db, [subscriptionEvent(row.id, contact.subscribed)]) : []
      return { contact, events }
    })
  } catch (err) {
    if (repo.isUniqueViolation(err)) throw emailTaken()
    throw err
  }
  await notifyEvents(ctx, result.events)
  return toContact(result.contact)
}

export async function deleteContact(ctx: Ctx, id: string): Promise<void> {
  const gone = await ctx.store.tx((db) => repo.deleteById(ctx.store, db, ctx.projectId, id))
  if (!gone) throw notFound('contact')
}

// Cursor list -----------------------------------------------------------------------------------------

export interface CursorState { s: listRepo.SortKey; d: listRepo.SortDir; v: string | number; i: string }

export function encodeCursor(c: CursorState): string {
  return Buffer.from(JSON.stringify([c.s, c.d, c.v, c.i])).toString('base64url')
}

export function decodeCursor(text: string): CursorState {
  try {
    const [s, d, v, i] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[]
    // As decodeTimeCursor: a made-up key the stores cannot hold is refused, not queried.
    if ((s === 'createdAt' && typeof v === 'number' && isStorableTime(v)) || (s === 'email' && typeof v === 'string' && isStorableText(v))) {
      if ((d === 'asc' || d === 'desc') && typeof i === 'string' && isStorableText(i)) return { s, d, v, i }
    }
  } catch { /* fall through */ }
  throw invalidCursor()
}

export const MAX_PAGE = 100
export const DEFAULT_PAGE = 20

export function clampLimit(limit: number | undefined, def = DEFAULT_PAGE, max = MAX_PAGE): number {
  if (limit === undefined || !Number.isFinite(limit)) return def
  return Math.max(1, Math.min(max, Math.trunc(limit)))
}

/**
 * GET /contacts: keyset pages in (createdAt, id) or (email) order. The cursor carries the sort, the
 * direction and the last row's key, so a page never depends on rows inserted since. `total` is counted
 * on the first page only (docs/decisions.md, Lists and pages), unless the client says `total=false`.
 */
export async function listContacts(ctx: Ctx, q: ListContactsQuery) {
  const limit = clampLimit(q.limit)
  const cur = q.cursor ? decodeCursor(q.cursor) : null
  const sort: listRepo.SortKey = cur?.s ?? (q.sort === 'email' ? 'email' : 'createdAt')
  const dir: listRepo.SortDir = cur?.d ?? (q.dir === 'asc' ? 'asc' : 'desc')
  const filter: listRepo.ListFilter = { search: q.search?.trim() || undefined, subscribed: q.subscribed }
  const plan = await listRepo.planSearch(ctx.store, filter)
  const [rows, total] = await Promise.all([
    listRepo.listPage(ctx.store, ctx.projectId, filter, sort, dir, limit + 1, cur ? { value: cur.v, id: cur.i } : null, plan),
    cur || q.total === false ? Promise.resolve(0) : listRepo.countMatching(ctx.store, ctx.projectId, filter, plan),
  ])
  const hasMore = rows.length > limit
  const page = hasMore ? rows.slice(0, limit) : rows
  const last = page[page.length - 1]
  const cursor = hasMore && last
    ? encodeCursor({ s: sort, d: dir, v: sort === 'email' ? last.email : last.createdAt.getTime(), i: last.id })
    : null
  return { data: page.map(toContact), cursor, hasMore, total }
}

/** POST /contacts/lookup: which of up to 500 emails exist, in the order given. */
export async function lookupContacts(ctx: Ctx, emails: string[]) {
  if (emails.length > 500) throw new AppError('VALIDATION_ERROR', 'At most 500 emails per lookup', { errors: [{ field: 'emails', message: 'At most 500 emails per lookup', code: 'too_big' }] })
  const normalized = emails.map(normalizeEmail)
  const rows = await repo.lookupEmails(ctx.store, ctx.projectId, [...new Set(normalized)])
  const byEmail = new Map(rows.map((r) => [r.email, r]))
  const results = normalized.map((email) => {
    const r = byEmail.get(email)
    return { email, exists: Boolean(r), id: r?.id ?? null, subscribed: r ? r.subscribed : null }
  })
  const found = results.filter((r) => r.exists).length
  return { results, found, missing: results.length - found }
}
