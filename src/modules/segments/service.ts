import { isForeignKeyViolation } from '../../db/failures'
import { LostRaceError } from '../../db/group-commit'
import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import { badRequest, conflict, flatError, invalidField, notFound } from '../../errors'
import { cleanTree, countMatching, pageMatching, prepareFilter, whereOf, type FilterTree, type PreparedFilter } from '../../filters'
import { segmentRefs } from '../../filters/check'
import { EMAIL_ACTIVITY_EVENTS } from '../../filters/types'
import { enqueue } from '../../jobs/queue'
import { normalizeEmail } from '../contacts/data'
import { againIfVanished, toContact, upsertContact } from '../contacts/service'
import type { UsageProvider, UsageRef } from '../contacts/usage'
import { appendEvents, appendSameEvents, notifyEvents, type EventRow, type NewEvent } from '../events/stream'
import type { AddMembersBody, CreateSegmentBody, PreviewBody, SegmentOut, UpdateSegmentBody } from './model'
import * as repo from './repo'
import type { SegmentRow } from './repo'
import { segmentUsers, type SegmentUser } from './usage'

export const COMPUTE_JOB = 'segments.compute'
export const REFRESH_JOB = 'segments.refresh'
export const computeKey = (segmentId: string) => `${COMPUTE_JOB}:${segmentId}`
export const refreshKey = (segmentId: string) => `${REFRESH_JOB}:${segmentId}`

/** Membership changes are written and their events emitted in transactions of this many contacts. */
export const MEMBERSHIP_CHUNK = 5000
/** Membership chunks written at once on PostgreSQL. */
export const COMPUTE_LANES_PG = 2

const CONDITION_REQUIRED = 'Condition is required for DYNAMIC segments'

export function toSegment(row: SegmentRow): SegmentOut {
  return {
    id: row.id, name: row.name, description: row.description ?? null, type: row.type,
    condition: row.type === 'DYNAMIC' ? row.condition ?? null : null,
    trackMembership: row.trackMembership, memberCount: row.memberCount, slug: row.slug, projectId: row.projectId,
    createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString(),
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** `<slug>` of segment.<slug>.entry: lower-case ASCII letters, digits and dashes from the name. */
export function slugify(name: string): string {
  const s = name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase()
    .replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60).replace(/-+$/, '')
  return s || 'segment'
}

function cleanName(name: string): string {
  const n = name.trim()
  if (!n) throw invalidField('name', 'name: must not be blank', 'too_small', name)
  return n
}

export function entryEvent(seg: SegmentRow, contactId: string): NewEvent {
  return { contactId, name: `segment.${seg.slug}.entry`, data: { segmentId: seg.id, segmentName: seg.name } }
}
export function exitEvent(seg: SegmentRow, contactId: string): NewEvent {
  return { contactId, name: `segment.${seg.slug}.exit`, data: { segmentId: seg.id, segmentName: seg.name } }
}

async function load(ctx: Ctx, id: string): Promise<SegmentRow> {
  const row = await repo.findById(ctx.store, ctx.projectId, id)
  if (!row) throw notFound('segment')
  return row
}

/** The stored condition of a DYNAMIC segment, prepared leniently (a segment it refers to may be gone since). */
export function prepareStored(ctx: Ctx, seg: SegmentRow): Promise<PreparedFilter> {
  return prepareFilter(ctx, seg.condition ?? { logic: 'AND', groups: [] }, { selfSegmentId: seg.id, lenient: true })
}

async function countOf(ctx: Ctx, seg: SegmentRow): Promise<number> {
  if (seg.type === 'STATIC') return repo.countMembers(ctx.store, ctx.projectId, seg.id)
  return countMatching(ctx, await prepareStored(ctx, seg))
}

/** Validates a DYNAMIC condition: the flat 400 of the contract (docs/decisions.md, Segments) when it is not an object, a 422 with paths when it is bad. */
async function checkCondition(ctx: Ctx, raw: unknown, selfSegmentId?: string): Promise<{ tree: FilterTree; prepared: PreparedFilter }> {
  if (!isPlainObject(raw)) throw flatError(CONDITION_REQUIRED)
  const prepared = await prepareFilter(ctx, raw, { path: 'condition', selfSegmentId })
  return { tree: cleanTree(raw), prepared }
}

/** POST /segments */
export async function createSegment(ctx: Ctx, body: CreateSegmentBody): Promise<SegmentOut> {
  const type = body.type ?? 'DYNAMIC'
  const name = cleanName(body.name)
  const id = Bun.randomUUIDv7()
  // STATIC: the condition is accepted and ignored (the contract leaves it undefined; ignoring keeps old clients working; docs/decisions.md, Segments).
  const checked = type === 'DYNAMIC' ? await checkCondition(ctx, body.condition, id) : null
  const track = body.trackMembership ?? false
  // Counted before anything is written: a failing count leaves no segment behind.
  const memberCount = checked ? await countMatching(ctx, checked.prepared) : 0
  const now = ctx.deps.clock.date()
  const base = slugify(name)
  const row = await ctx.store.tx(async (db) => {
    for (let attempt = 0; attempt < 5; attempt++) {
      const taken = new Set(await repo.slugsLike(ctx.store, ctx.projectId, base, db))
      let slug = base
      for (let n = 2; taken.has(slug); n++) slug = `${base}-${n}`
      const inserted = await repo.insertIfFree(ctx.store, db, {
        id, projectId: ctx.projectId, name, slug, description: body.description ?? null, type,
        condition: checked?.tree ?? null, trackMembership: track, memberCount, countedAt: checked ? now : null, computedAt: null,
        createdAt: now, updatedAt: now,
      })
      if (inserted) {
        if (track && type === 'DYNAMIC') await enqueue(ctx.store, COMPUTE_JOB, { segmentId: id }, { wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, uniqueKey: computeKey(id) }, db)
        return inserted
      }
    }
    throw conflict('Another segment was created with the same name at the same time; retry')
  })
  return toSegment(row)
}

/** POST /segments/preview: how many contacts a condition matches now; nothing is written. */
export async function previewSegment(ctx: Ctx, body: PreviewBody): Promise<{ count: number; countedAt: string }> {
  if (body.segmentId !== undefined) await load(ctx, body.segmentId)
  const { prepared } = await checkCondition(ctx, body.condition, body.segmentId)
  const count = await countMatching(ctx, prepared)
  return { count, countedAt: ctx.deps.clock.date().toISOString() }
}

/** GET /segments: every segment of the project, newest first. */
export async function listSegments(ctx: Ctx): Promise<SegmentOut[]> {
  return (await repo.listByProject(ctx.store, ctx.projectId)).map(toSegment)
}

export async function getSegment(ctx: Ctx, id: string): Promise<SegmentOut> {
  return toSegment(await load(ctx, id))
}

/** PATCH /segments/:id: name, description, condition (DYNAMIC only; ignored for STATIC), trackMembership. */
export async function updateSegment(ctx: Ctx, id: string, body: UpdateSegmentBody): Promise<SegmentOut> {
  const current = await load(ctx, id)
  const checked = current.type === 'DYNAMIC' && body.condition !== undefined ? await checkCondition(ctx, body.condition, id) : null
  const set: Partial<SegmentRow> = { updatedAt: ctx.deps.clock.date() }
  if (body.name !== undefined) set.name = cleanName(body.name)
  if (body.description !== undefined) set.description = body.description
  if (checked) {
    // A new condition is counted before anything is written, like a new segment's.
    set.condition = checked.tree
    set.memberCount = await countMatching(ctx, checked.prepared)
    set.countedAt = ctx.deps.clock.date()
  }
  if (body.trackMembership !== undefined) set.trackMembership = body.trackMembership
  const row = await ctx.store.tx(async (db) => {
    const updated = await repo.update(ctx.store, db, ctx.projectId, id, set)
    if (!updated) throw notFound('segment')
    if (updated.type === 'DYNAMIC') {
      // Tracking turned off: the membership rows are dropped (turning it on again starts from nobody).
      if (current.trackMembership && !updated.trackMembership) await repo.clearMembers(ctx.store, db, ctx.projectId, id)
      if (updated.trackMembership && (checked || !current.trackMembership)) {
        await enqueue(ctx.store, COMPUTE_JOB, { segmentId: id }, { wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, uniqueKey: computeKey(id) }, db)
      }
    }
    return updated
  })
  return toSegment(row)
}

/** DELETE /segments/:id: 409 while something uses it (an active campaign, another segment's condition). */
export async function deleteSegment(ctx: Ctx, id: string): Promise<void> {
  await load(ctx, id)
  const users = await segmentUsers(ctx, id)
  if (users.length) {
    const names = users.map((u) => `${u.kind.replace(/s$/, '')} "${u.name}"`).join(', ')
    throw conflict(`The segment is in use by ${names}`, { usedBy: users })
  }
  const gone = await ctx.store.tx((db) => repo.remove(ctx.store, db, ctx.projectId, id))
  if (!gone) throw notFound('segment')
}

const MAX_PAGE_NUMBER = 10_000_000

/** GET /segments/:id/contacts: page-based; live for DYNAMIC segments, the member list for STATIC ones. */
export async function segmentContacts(ctx: Ctx, id: string, q: { page?: number; pageSize?: number }) {
  const seg = await load(ctx, id)
  const page = Math.min(MAX_PAGE_NUMBER, Math.max(1, Math.trunc(q.page ?? 1)))
  const pageSize = Math.min(100, Math.max(1, Math.trunc(q.pageSize ?? 20)))
  const offset = (page - 1) * pageSize
  let rows: repo.ContactRow[]
  let total: number
  if (seg.type === 'STATIC') {
    [rows, total] = await Promise.all([repo.memberPage(ctx.store, ctx.projectId, id, offset, pageSize), repo.countMembers(ctx.store, ctx.projectId, id)])
  } else {
    const f = await prepareStored(ctx, seg)
    ;[rows, total] = await Promise.all([pageMatching(ctx, f, { offset, limit: pageSize }), countMatching(ctx, f)])
  }
  return { data: rows.map(toContact), page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
}

function staticOnly(seg: SegmentRow) {
  if (seg.type !== 'STATIC') throw badRequest('Members are added and removed only on STATIC segments: the members of a DYNAMIC segment follow its condition')
}

/** POST /segments/:id/members: adds contacts by email to a STATIC segment, in one transaction. */
export async function addMembers(ctx: Ctx, id: string, body: AddMembersBody) {
  staticOnly(await load(ctx, id))
  const emails = [...new Set(body.emails.map(normalizeEmail))]
  // A contact it creates or adds, deleted by another writer mid-write (PostgreSQL): the transaction runs again.
  const result = await againIfVanished(ctx.store, () => ctx.store.tx(async (db) => {
    const seg = await repo.findById(ctx.store, ctx.projectId, id, db)
    if (!seg) throw notFound('segment')
    const found = await repo.contactsByEmail(ctx.store, db, ctx.projectId, emails)
    const known = new Set(found.map((c) => c.email))
    const missing = emails.filter((e) => !known.has(e))
    const events: EventRow[] = []
    let created = 0
    if (body.createMissing) {
      for (const email of missing) {
        const r = await upsertContact(ctx, { email, subscribed: body.subscribed }, { defaultSubscribed: true, db })
        if (r.isNew) created++
        found.push({ id: r.contact.id, email: r.contact.email })
        events.push(...r.events)
      }
    }
    const now = ctx.deps.clock.date()
    const added = await repo.addMembers(ctx.store, db, ctx.projectId, id, found.map((c) => c.id), now).catch((err: unknown) => {
      // A contact found above and deleted by another writer since (PostgreSQL): the whole runs again, and
      // finds it missing. (Locking the contacts at the read would order its locks against the upserts'.)
      if (isForeignKeyViolation(err)) throw new LostRaceError('A contact was deleted by another request while it was added; send the request again')
      throw err
    })
    if (seg.trackMembership) events.push(...await appendEvents(ctx, db, added.map((cid) => entryEvent(seg, cid))))
    const memberCount = await repo.recountMembers(ctx.store, db, ctx.projectId, id, now)
    return { added: added.length, alreadyMembers: found.length - added.length, created, notFound: body.createMissing ? [] : missing, memberCount, events }
  }))
  await notifyEvents(ctx, result.events)
  const { events: _events, ...out } = result
  return out
}

/** DELETE /segments/:id/members: removes contacts by email from a STATIC segment. */
export async function removeMembers(ctx: Ctx, id: string, body: { emails: string[] }) {
  staticOnly(await load(ctx, id))
  const emails = [...new Set(body.emails.map(normalizeEmail))]
  const result = await ctx.store.tx(async (db) => {
    const seg = await repo.findById(ctx.store, ctx.projectId, id, db)
    if (!seg) throw notFound('segment')
    const found = await repo.contactsByEmail(ctx.store, db, ctx.projectId, emails)
    const removed = new Set(await repo.removeMembers(ctx.store, db, ctx.projectId, id, found.map((c) => c.id)))
    const events = seg.trackMembership ? await appendEvents(ctx, db, [...removed].map((cid) => exitEvent(seg, cid))) : []
    const memberCount = await repo.recountMembers(ctx.store, db, ctx.projectId, id, ctx.deps.clock.date())
    const removedEmails = new Set(found.filter((c) => removed.has(c.id)).map((c) => c.email))
    return { removed: removed.size, notMembers: emails.filter((e) => !removedEmails.has(e)), memberCount, events }
  })
  await notifyEvents(ctx, result.events)
  const { events: _events, ...out } = result
  return out
}

/** The STATIC segment `id` of the project (404 when not the project's, 400 when DYNAMIC): contacts' bulk actions. */
export async function staticSegmentOf(ctx: Ctx, id: string): Promise<SegmentRow> {
  const seg = await load(ctx, id)
  staticOnly(seg)
  return seg
}

/**
 * Adds contacts by id to a STATIC segment inside the caller's transaction (contacts' bulk job); returns how
 * many joined and the entry events of a tracked segment (the caller notifies after commit).
 */
export async function addMemberIds(ctx: Ctx, db: Db, id: string, contactIds: string[], now: Date): Promise<{ changed: number; events: EventRow[] }> {
  const seg = await repo.findById(ctx.store, ctx.projectId, id, db)
  if (!seg) throw notFound('segment')
  staticOnly(seg)
  const added = await repo.addMembers(ctx.store, db, ctx.projectId, id, contactIds, now)
  const events = seg.trackMembership ? await appendEvents(ctx, db, added.map((cid) => entryEvent(seg, cid))) : []
  await repo.recountMembers(ctx.store, db, ctx.projectId, id, now)
  return { changed: added.length, events }
}

/** `addMemberIds` in reverse: removes contacts by id, with exit events for a tracked segment. */
export async function removeMemberIds(ctx: Ctx, db: Db, id: string, contactIds: string[], now: Date): Promise<{ changed: number; events: EventRow[] }> {
  const seg = await repo.findById(ctx.store, ctx.projectId, id, db)
  if (!seg) throw notFound('segment')
  staticOnly(seg)
  const removed = await repo.removeMembers(ctx.store, db, ctx.projectId, id, contactIds)
  const events = seg.trackMembership ? await appendEvents(ctx, db, removed.map((cid) => exitEvent(seg, cid))) : []
  await repo.recountMembers(ctx.store, db, ctx.projectId, id, now)
  return { changed: removed.length, events }
}

export interface ComputeOutcome { id: string; entered: number; exited: number; memberCount: number; computedAt: string }

/**
 * Recomputes the membership rows of a tracked DYNAMIC segment and emits one segment.<slug>.entry per contact
 * that joined and one .exit per contact that left; nothing when nothing changed.
 *
 * The diff is read in one query without holding the writer (the condition evaluated once per contact, as of
 * `ctx.now`); then, chunk by chunk, one transaction writes the member rows and appends the events. Events are
 * emitted only for rows the statement actually inserted or deleted, so two computes running at once (a job and
 * POST /compute, two nodes) never emit a change twice, and a crash between chunks loses nothing: the next
 * compute finds the rest of the diff. A contact that changes while a compute runs is settled by the next one.
 */
export async function computeMembership(ctx: Ctx, seg: SegmentRow): Promise<ComputeOutcome> {
  const f = await prepareStored(ctx, seg)
  const { entering, leaving } = await repo.membershipDiff(ctx.store, ctx.projectId, seg.id, whereOf(ctx, f))
  let entered = 0
  let exited = 0
  let stopped = false
  const applyChunk = async (chunk: string[], enter: boolean) => {
    const rows = await ctx.store.tx(async (db) => {
      // Holds the segment (PostgreSQL: FOR SHARE) so it cannot be deleted or untracked under this chunk.
      const live = await repo.findById(ctx.store, ctx.projectId, seg.id, db, 'share')
      if (live?.type !== 'DYNAMIC' || !live.trackMembership) return null
      const at = ctx.deps.clock.date()
      const changed = enter
        ? await repo.enter(ctx.store, db, ctx.projectId, seg.id, chunk, at)
        : await repo.leave(ctx.store, db, seg.id, chunk)
      const e = (enter ? entryEvent : exitEvent)(live, '')
      return appendSameEvents(ctx, db, e.name, e.data ?? {}, changed, at)
    })
    if (!rows) { stopped = true; return }
    if (enter) entered += rows.length
    else exited += rows.length
    await notifyEvents(ctx, rows)
  }
  // PostgreSQL writes chunks on two connections at once (its per-row index and key maintenance is the cost);
  // SQLite has one writer, so one at a time.
  // dialect: PostgreSQL writes chunks on two connections at once; SQLite has one writer
  const lanes = ctx.store.singleWriter ? 1 : COMPUTE_LANES_PG
  for (const [ids, enter] of [[entering, true], [leaving, false]] as const) {
    let next = 0
    await Promise.all(Array.from({ length: lanes }, async () => {
      while (!stopped && next < ids.length) {
        const chunk = ids.slice(next, next + MEMBERSHIP_CHUNK)
        next += MEMBERSHIP_CHUNK
        await applyChunk(chunk, enter)
      }
    }))
  }
  const computedAt = ctx.deps.clock.date()
  const memberCount = await ctx.store.tx((db) => repo.recountMembers(ctx.store, db, ctx.projectId, seg.id, computedAt, true))
  return { id: seg.id, entered, exited, memberCount, computedAt: computedAt.toISOString() }
}

/** POST /segments/:id/compute: tracked DYNAMIC segments only. */
export async function computeSegment(ctx: Ctx, id: string): Promise<ComputeOutcome> {
  const seg = await load(ctx, id)
  if (seg.type !== 'DYNAMIC' || !seg.trackMembership) {
    throw badRequest('Only DYNAMIC segments with trackMembership true are computed; use POST /segments/:id/refresh to refresh the count')
  }
  return computeMembership(ctx, seg)
}

/** POST /segments/:id/refresh: the count only (no member rows, no events). */
export async function refreshSegment(ctx: Ctx, id: string) {
  const seg = await load(ctx, id)
  const n = await countOf(ctx, seg)
  const countedAt = ctx.deps.clock.date()
  await repo.setCount(ctx.store, ctx.projectId, id, n, countedAt)
  return { id, memberCount: n, countedAt: countedAt.toISOString() }
}

/** Job: what the 5-minute sweep and the recompute hints ask for one segment. */
export async function recomputeById(ctx: Ctx, id: string): Promise<Record<string, unknown>> {
  const seg = await repo.findById(ctx.store, ctx.projectId, id)
  if (!seg) return { skipped: 'segment deleted' }
  if (seg.type === 'DYNAMIC' && seg.trackMembership) {
    const r = await computeMembership(ctx, seg)
    return { entered: r.entered, exited: r.exited, memberCount: r.memberCount }
  }
  const n = await countOf(ctx, seg)
  await repo.setCount(ctx.store, ctx.projectId, id, n, ctx.deps.clock.date())
  return { memberCount: n }
}

// ---- who refers to what ----

function filtersOf(tree: unknown): Array<{ field: string }> {
  const out: Array<{ field: string }> = []
  const walk = (t: unknown, depth: number) => {
    if (!isPlainObject(t) || !Array.isArray(t.groups) || depth > 10) return
    for (const g of t.groups) {
      if (!isPlainObject(g)) continue
      if (Array.isArray(g.filters)) for (const f of g.filters) if (isPlainObject(f) && typeof f.field === 'string') out.push({ field: f.field })
      walk(g.conditions, depth + 1)
    }
  }
  walk(tree, 0)
  return out
}

async function segmentsWhere(ctx: Ctx, test: (field: string) => boolean): Promise<UsageRef[]> {
  return (await repo.listByProject(ctx.store, ctx.projectId))
    .filter((s) => s.type === 'DYNAMIC' && filtersOf(s.condition).some((f) => test(f.field)))
    .map((s) => ({ id: s.id, name: s.name, where: 'condition' }))
}

const activityEventOf = (field: string): string | undefined => (EMAIL_ACTIVITY_EVENTS as Record<string, string>)[field]

/** Other segments referring to a segment block its deletion. Registered by `wireConsumers` (src/main.ts). */
export const segmentsReferringToSegment: SegmentUser = {
  kind: 'segments',
  async usersOf(ctx, segmentId) {
    return (await repo.listByProject(ctx.store, ctx.projectId))
      .filter((s) => s.id !== segmentId && s.type === 'DYNAMIC' && segmentRefs(s.condition).some((r) => r.segmentId === segmentId))
      .map((s) => ({ id: s.id, name: s.name }))
  },
}

/**
 * The segments whose condition reads a contact field or an event, for GET /contacts/fields/:field/usage and
 * GET /events/:eventName/usage. Registered by `wireConsumers` (src/main.ts).
 */
export const segmentFieldAndEventUsage: UsageProvider = {
  kind: 'segments',
  fieldUsage: (ctx, field) => segmentsWhere(ctx, (f) => f === field || f === `data.${field}` || f.startsWith(`data.${field}.`)),
  eventUsage: (ctx, name) => segmentsWhere(ctx, (f) => f === `event.${name}` || activityEventOf(f) === name),
}
