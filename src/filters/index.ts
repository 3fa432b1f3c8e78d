import type { SQL } from 'drizzle-orm'
import type { Db, Store } from '../db/client'
import { validation, type FieldError } from '../errors'
import { checkTree, segmentRefs } from './check'
import { compileTree, type Mode, type ResolvedSegment } from './compile'
import { standardFields, OPERATORS_BY_KIND, type FieldInfo } from './fields'
import * as repo from './repo'
import { MAX_SEGMENT_DEPTH, type CheckedTree } from './types'

/**
 * The filter engine (docs/decisions.md, Filters: one engine for segments, campaign audiences and workflow conditions).
 *
 *   const f = await prepareFilter(ctx, body.condition)   // 422 with the path of every bad part
 *   await countMatching(ctx, f)                          // one SQL query
 *   await pageMatching(ctx, f, { offset, limit })
 *   await contactMatches(ctx, f, contactId)              // a workflow CONDITION step
 *   whereOf(ctx, f)                                      // the condition, to embed in a caller's query
 */
export type { FilterTree, CheckedTree } from './types'
export type { FieldInfo } from './fields'
export { checkTree, cleanTree, parseIsoDate } from './check'

/** What a filter call needs: Ctx satisfies it. */
export interface FilterCtx { store: Store; projectId: string; now: Date }

export interface FilterDeps {
  /** Event names the tree tests (event.<name>, and email.open/click/bounce for the email.* fields). */
  events: Set<string>
  /** True when the tree reads contact columns or data (changes of contacts can change its result). */
  contacts: boolean
  /** STATIC segments whose member lists it reads. */
  staticSegments: Set<string>
}

export interface PreparedFilter {
  tree: CheckedTree
  segments: ReadonlyMap<string, ResolvedSegment>
  deps: FilterDeps
}

export interface PrepareOptions {
  /** Path of the tree in the request body, the prefix of every error's field (default "condition"). */
  path?: string
  /** The segment this tree belongs to: a reference back to it is a cycle. */
  selfSegmentId?: string
  /**
   * For trees already stored (jobs, sending): a reference to a segment that no longer exists, or a cycle
   * made by concurrent edits, compiles to "not a member" instead of failing.
   */
  lenient?: boolean
  db?: Db
}

function treeSegmentIds(t: CheckedTree, out: string[] = []): string[] {
  for (const g of t.groups) {
    for (const p of g.predicates) if (p.kind === 'segment') out.push(p.segmentId)
    if (g.conditions) treeSegmentIds(g.conditions, out)
  }
  return out
}

function collectDeps(t: CheckedTree, segments: ReadonlyMap<string, ResolvedSegment>, deps: FilterDeps, seen: Set<string>) {
  for (const g of t.groups) {
    for (const p of g.predicates) {
      if (p.kind === 'event') deps.events.add(p.name)
      else if (p.kind === 'segment') {
        const s = segments.get(p.segmentId)
        if (!s || seen.has(s.id)) continue
        seen.add(s.id)
        if (s.type === 'STATIC') deps.staticSegments.add(s.id)
        else collectDeps(s.tree, segments, deps, seen)
      } else deps.contacts = true
    }
    if (g.conditions) collectDeps(g.conditions, segments, deps, seen)
  }
}

/**
 * Validates a filter tree (structure, fields, operators, units, value types, nesting <= 5, segment references:
 * they must exist in the project and form no cycle) and loads the segments it references. Throws a 422
 * VALIDATION_ERROR whose errors name the path of each bad filter.
 */
export async function prepareFilter(ctx: FilterCtx, raw: unknown, opts: PrepareOptions = {}): Promise<PreparedFilter> {
  const path = opts.path ?? 'condition'
  const checked = checkTree(raw, path)
  if (!checked.tree) throw validation(checked.errors, checked.errors[0].message)
  const tree = checked.tree

  // Load every segment reachable through references, level by level.
  const segments = new Map<string, ResolvedSegment>()
  const broken = new Set<string>()
  let frontier = treeSegmentIds(tree)
  for (let level = 0; frontier.length && level <= MAX_SEGMENT_DEPTH; level++) {
    const ids = [...new Set(frontier)].filter((id) => !segments.has(id) && !broken.has(id))
    frontier = []
    const rows = await repo.loadSegments(ctx.store, ctx.projectId, ids, opts.db)
    const found = new Map(rows.map((r) => [r.id, r]))
    for (const id of ids) {
      const row = found.get(id)
      if (!row) { broken.add(id); continue }
      if (row.type === 'STATIC') { segments.set(id, { id, type: 'STATIC' }); continue }
      const sub = checkTree(row.condition, `segment ${id}`)
      if (!sub.tree) { broken.add(id); continue }
      segments.set(id, { id, type: 'DYNAMIC', tree: sub.tree })
      frontier.push(...treeSegmentIds(sub.tree))
    }
  }

  if (!opts.lenient) {
    const errors: FieldError[] = []
    const self = opts.selfSegmentId
    const visit = (id: string, chain: string[]): string | null => {
      if (id === self || chain.includes(id)) return `segment references form a cycle: ${[...(self ? ['this segment'] : []), ...chain, id].join(' -> ')}`
      if (chain.length >= MAX_SEGMENT_DEPTH) return `segments reference each other at most ${MAX_SEGMENT_DEPTH} levels deep`
      const s = segments.get(id)
      if (!s || s.type === 'STATIC') return null
      for (const next of treeSegmentIds(s.tree)) {
        const e = visit(next, [...chain, id])
        if (e) return e
      }
      return null
    }
    for (const ref of segmentRefs(raw, path)) {
      if (!segments.has(ref.segmentId) && ref.segmentId !== self) {
        errors.push({ field: `${ref.path}.field`, message: `${ref.path}.field: segment ${ref.segmentId} does not exist in this project`, code: 'unknown_segment', received: `segment.${ref.segmentId}` })
        continue
      }
      const e = visit(ref.segmentId, [])
      if (e) errors.push({ field: `${ref.path}.field`, message: `${ref.path}.field: ${e}`, code: 'segment_cycle', received: `segment.${ref.segmentId}` })
    }
    if (errors.length) throw validation(errors, errors[0].message)
  }

  const deps: FilterDeps = { events: new Set(), contacts: false, staticSegments: new Set() }
  collectDeps(tree, segments, deps, new Set())
  return { tree, segments, deps }
}

/** The prepared tree as one boolean SQL expression over `contacts` (see compile.ts for the modes). */
export function whereOf(ctx: FilterCtx, f: PreparedFilter, mode: Mode = 'set'): SQL {
  return compileTree(f.tree, { dialect: ctx.store.dialect, projectId: ctx.projectId, now: ctx.now, mode, segments: f.segments })
}

/** How many contacts of the project match: one query. */
export function countMatching(ctx: FilterCtx, f: PreparedFilter, db?: Db): Promise<number> {
  return repo.countWhere(ctx.store, ctx.projectId, whereOf(ctx, f), db)
}

/** A page of matching contacts, newest first: one query. */
export function pageMatching(ctx: FilterCtx, f: PreparedFilter, page: { offset: number; limit: number }, db?: Db): Promise<repo.ContactRow[]> {
  return repo.pageWhere(ctx.store, ctx.projectId, whereOf(ctx, f), page.offset, page.limit, db)
}

/** The ids among `ids` that match (evaluated per contact: the form for small sets). */
export function matchingAmong(ctx: FilterCtx, f: PreparedFilter, ids: string[], db?: Db): Promise<string[]> {
  return repo.idsWhereAmong(ctx.store, ctx.projectId, whereOf(ctx, f, 'correlated'), ids, db)
}

/** Whether one contact matches (a workflow CONDITION step). */
export async function contactMatches(ctx: FilterCtx, f: PreparedFilter, contactId: string, db?: Db): Promise<boolean> {
  return (await matchingAmong(ctx, f, [contactId], db)).length === 1
}

function jsonKind(v: unknown): string {
  if (typeof v === 'string') return /^\d{4}-\d{2}-\d{2}/.test(v) ? 'date' : 'string'
  if (typeof v === 'number') return 'number'
  if (typeof v === 'boolean') return 'boolean'
  return 'object'
}

/**
 * The fields a filter (or a workflow CONDITION step) can use in this project: the standard ones, the custom
 * data fields seen on the 1,000 most recent contacts (nested objects as dotted paths), event.<name> for every
 * event name of the project, and segment.<id> for every segment (`segments` given by the caller).
 */
export async function listFilterFields(ctx: FilterCtx, segments: Array<{ id: string; name: string }> = []): Promise<FieldInfo[]> {
  const out = standardFields()
  const types = new Map<string, Set<string>>()
  const walk = (obj: Record<string, unknown>, prefix: string, depth: number) => {
    for (const [k, v] of Object.entries(obj)) {
      if (v === null || v === undefined) continue
      if (typeof v === 'object' && !Array.isArray(v) && depth < 5) { walk(v as Record<string, unknown>, `${prefix}${k}.`, depth + 1); continue }
      const key = `${prefix}${k}`
      let kinds = types.get(key)
      if (!kinds) { kinds = new Set(); types.set(key, kinds) }
      kinds.add(jsonKind(v))
    }
  }
  for (const data of await repo.recentContactData(ctx.store, ctx.projectId, 1000)) walk(data, '', 0)
  for (const [key, kinds] of [...types].sort(([a], [b]) => a.localeCompare(b))) {
    out.push({ field: `data.${key}`, label: key, kind: 'data', types: [...kinds].sort(), operators: OPERATORS_BY_KIND.data })
  }
  for (const name of await repo.eventNames(ctx.store, ctx.projectId, 500)) {
    out.push({ field: `event.${name}`, label: name, kind: 'event', operators: OPERATORS_BY_KIND.event })
  }
  for (const s of segments) out.push({ field: `segment.${s.id}`, label: s.name, kind: 'segment', operators: OPERATORS_BY_KIND.segment })
  return out
}
