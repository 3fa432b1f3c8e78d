import { sql, type SQL } from 'drizzle-orm'
import type { Dialect } from '../db/client'
import { boolParam, moment, noIndex, numberParam, textContains, textParam } from '../db/dialect'
import { jsonPathDate, jsonPathIsString, jsonPathNumber, jsonPathText, jsonPathType } from '../db/json-path'
import { isInlineName } from '../modules/events/inline'
import { EPOCH_SECONDS_BELOW } from './check'
import { clampTime } from '../storable'
import { MAX_SEGMENT_DEPTH, UNIT_MS, type CheckedTree, type Comparable, type CompareOp, type DateColumn, type Predicate } from './types'

/**
 * Compiles a checked filter tree into ONE boolean SQL expression over the row `contacts` (the table,
 * unaliased), for SQLite (JSON1: json_extract / json_type) or PostgreSQL (jsonb). Every value and every
 * JSON key is a bound parameter; the SQL text holds only constants written here.
 *
 * Each predicate yields TRUE or FALSE, never NULL (a missing data field is FALSE for positive operators),
 * so NOT, AND and OR behave as the filter reads: `notEquals x` also matches contacts without the field.
 *
 * Two modes for the event and static-segment tests:
 * - `set`: `contacts.id IN (SELECT contact_id FROM events WHERE project_id, name[, created_at] ...)`, evaluated
 *   once per query from the (project_id, name, created_at) index: the fast form for counting or listing a
 *   whole project;
 * - `correlated`: `EXISTS (SELECT ... WHERE contact_id = contacts.id ...)`: the fast form for a handful of
 *   contacts (one contact's workflow CONDITION step, re-checking a chunk of a membership diff).
 *
 * email.opened / email.clicked / email.bounced read the event stream (email.open, email.click, email.bounce
 * events with their contact_id): the one stream every module writes, so these fields need no other table.
 */
export type Mode = 'set' | 'correlated'

export type ResolvedSegment =
  | { id: string; type: 'STATIC' }
  | { id: string; type: 'DYNAMIC'; tree: CheckedTree }

export interface CompileContext {
  dialect: Dialect
  projectId: string
  now: Date
  mode: Mode
  /** Segments the tree references (directly or through other segments), loaded by prepare.ts. */
  segments: ReadonlyMap<string, ResolvedSegment>
}

/** Text a JSON number (or a number with spaces around) can be, in either store's numeric reading. */
const JSON_NUMBER_TEXT = /^\s*[-+]?(\d|\.\d)/

const TRUE = sql.raw('(1 = 1)')
const FALSE = sql.raw('(1 = 0)')
/** The JSON column filters read. */
const DATA = sql.raw('contacts.data')
const DAY = UNIT_MS.days

function all(parts: SQL[]): SQL {
  if (!parts.length) return TRUE
  return parts.length === 1 ? parts[0] : sql`(${sql.join(parts, sql.raw(' AND '))})`
}
function any(parts: SQL[]): SQL {
  if (!parts.length) return FALSE
  return parts.length === 1 ? parts[0] : sql`(${sql.join(parts, sql.raw(' OR '))})`
}
const not = (x: SQL) => sql`(NOT ${x})`
const orFalse = (x: SQL) => sql`COALESCE(${x}, ${FALSE})`

const CMP: Record<Exclude<CompareOp, 'equals' | 'notEquals'>, string> = {
  greaterThan: '>', lessThan: '<', greaterThanOrEqual: '>=', lessThanOrEqual: '<=',
}

class Compiler {
  /** Segments being inlined, to stop on a cycle (a concurrent edit can create one after validation). */
  private stack: string[] = []

  constructor(private c: CompileContext) {}

  // ---- bound parameters, typed for PostgreSQL ----
  private text(s: string): SQL { return textParam(this.c, s) }
  private num(n: number): SQL { return numberParam(this.c, n) }
  private bool(b: boolean): SQL { return boolParam(this.c, b) }
  /**
   * A value for a contacts/events timestamp column. Dates were checked to lie in the years PostgreSQL
   * reads (src/storable.ts); the end of the day 9999-12-31 is the one bound computed past them.
   */
  private ts(ms: number): SQL { return moment(this.c, clampTime(ms)) }

  // ---- contacts.data access (src/db/json-path.ts) ----
  private jtype(path: string[]): SQL { return jsonPathType(this.c, DATA, path) }
  private textOf(path: string[]): SQL { return jsonPathText(this.c, DATA, path) }
  private numberOf(path: string[]): SQL { return jsonPathNumber(this.c, DATA, path) }
  private dateOf(path: string[]): SQL { return jsonPathDate(this.c, DATA, path, EPOCH_SECONDS_BELOW) }

  /** `expr` compared with a date value; a date without time stands for its whole UTC day. */
  private compareDate(expr: SQL, op: CompareOp, v: Comparable & { type: 'date' }, param: (ms: number) => SQL): SQL {
    const start = v.ms
    const end = v.dayOnly ? v.ms + DAY : null
    switch (op) {
      case 'equals': return end === null ? sql`${expr} = ${param(start)}` : sql`(${expr} >= ${param(start)} AND ${expr} < ${param(end)})`
      case 'notEquals': return not(this.compareDate(expr, 'equals', v, param))
      case 'greaterThan': return end === null ? sql`${expr} > ${param(start)}` : sql`${expr} >= ${param(end)}`
      case 'greaterThanOrEqual': return sql`${expr} >= ${param(start)}`
      case 'lessThan': return sql`${expr} < ${param(start)}`
      case 'lessThanOrEqual': return end === null ? sql`${expr} <= ${param(start)}` : sql`${expr} < ${param(end)}`
    }
  }

  /**
   * A string no number, boolean or JSON text can print as: only a stored JSON string can equal it, so the
   * equality needs no type juggling (the common `data.plan equals "pro"` costs one JSON look-up).
   */
  private plainStringEquals(s: string): boolean {
    return !JSON_NUMBER_TEXT.test(s) && s !== 'true' && s !== 'false' && !/^\s*[[{"]/.test(s)
  }

  private stringEquals(path: string[], s: string): SQL { return jsonPathIsString(this.c, DATA, path, s) }

  private column(col: DateColumn): SQL { return sql.raw(`contacts.${col}`) }

  // ---- events and segments ----
  /**
   * The contact has events named `name` (since, more than). email.sent and email.delivery may also be the
   * rows of emails delivered directly (src/modules/events/inline.ts): one event of each per such email.
   */
  private eventTest(name: string, sinceMs: number | null, moreThan: number | null): SQL {
    const since = sinceMs === null ? sql`` : sql` AND e.created_at >= ${this.ts(sinceMs)}`
    const inline = isInlineName(name)
    const inlineSince = sinceMs === null ? sql`` : sql` AND m.delivered_at >= ${this.ts(sinceMs)}`
    const project = this.text(this.c.projectId)
    const many = moreThan !== null && moreThan > 0
    if (this.c.mode === 'correlated') {
      const where = sql`e.contact_id = contacts.id AND e.project_id = ${project} AND e.name = ${this.text(name)}${since}`
      // SQLite: unary + keeps the planner on the contact's emails (not every inline email of the project).
      const inlineWhere = sql`m.contact_id = contacts.id AND ${noIndex(this.c, sql.raw('m.project_id'))} = ${project} AND m.inline_events IS NOT NULL${inlineSince}`
      if (many) {
        const stored = sql`(SELECT count(*) FROM events e WHERE ${where})`
        return inline ? sql`((${stored} + (SELECT count(*) FROM emails m WHERE ${inlineWhere})) > ${moreThan})` : sql`(${stored} > ${moreThan})`
      }
      const stored = sql`EXISTS (SELECT 1 FROM events e WHERE ${where})`
      return inline ? sql`(${stored} OR EXISTS (SELECT 1 FROM emails m WHERE ${inlineWhere}))` : stored
    }
    const where = sql`e.project_id = ${project} AND e.name = ${this.text(name)} AND e.contact_id IS NOT NULL${since}`
    const inlineWhere = sql`m.project_id = ${project} AND m.inline_events IS NOT NULL AND m.contact_id IS NOT NULL${inlineSince}`
    if (many) {
      if (!inline) return sql`contacts.id IN (SELECT e.contact_id FROM events e WHERE ${where} GROUP BY e.contact_id HAVING count(*) > ${moreThan})`
      return sql`contacts.id IN (SELECT x.contact_id FROM (SELECT e.contact_id FROM events e WHERE ${where} UNION ALL SELECT m.contact_id FROM emails m WHERE ${inlineWhere}) x
        GROUP BY x.contact_id HAVING count(*) > ${moreThan})`
    }
    const stored = sql`contacts.id IN (SELECT e.contact_id FROM events e WHERE ${where})`
    return inline ? sql`(${stored} OR contacts.id IN (SELECT m.contact_id FROM emails m WHERE ${inlineWhere}))` : stored
  }

  private segmentTest(id: string): SQL {
    const seg = this.c.segments.get(id)
    if (!seg || this.stack.includes(id) || this.stack.length >= MAX_SEGMENT_DEPTH) return FALSE
    if (seg.type === 'STATIC') {
      if (this.c.mode === 'correlated') return sql`EXISTS (SELECT 1 FROM segment_members m WHERE m.segment_id = ${this.text(id)} AND m.contact_id = contacts.id)`
      return sql`contacts.id IN (SELECT m.contact_id FROM segment_members m WHERE m.segment_id = ${this.text(id)})`
    }
    this.stack.push(id)
    try { return this.tree(seg.tree) } finally { this.stack.pop() }
  }

  // ---- the tree ----
  tree(t: CheckedTree): SQL {
    const groups = t.groups.map((g) => {
      const parts = g.predicates.map((p) => this.predicate(p))
      if (g.conditions) parts.push(this.tree(g.conditions))
      return all(parts)
    })
    if (!groups.length) return TRUE
    return t.logic === 'AND' ? all(groups) : any(groups)
  }

  predicate(p: Predicate): SQL {
    const now = this.c.now.getTime()
    switch (p.kind) {
      case 'email': {
        const v = this.text(p.value)
        const test = p.op === 'equals' || p.op === 'notEquals'
          ? sql`contacts.email = ${v}`
          : textContains(this.c, sql.raw('contacts.email'), v)
        return p.op.startsWith('not') ? not(test) : test
      }
      case 'subscribed': {
        const test = sql`contacts.subscribed = ${this.bool(p.value)}`
        return p.op === 'notEquals' ? not(test) : test
      }
      case 'column-date': return this.compareDate(this.column(p.column), p.op, p.value, (ms) => this.ts(ms))
      case 'column-window': {
        const col = this.column(p.column)
        const since = now - p.windowMs
        return p.op === 'within' ? sql`(${col} >= ${this.ts(since)} AND ${col} <= ${this.ts(now)})` : sql`${col} < ${this.ts(since)}`
      }
      case 'data-window': {
        const d = this.dateOf(p.path)
        const since = now - p.windowMs
        return p.op === 'within'
          ? orFalse(sql`(${d} >= ${this.num(since)} AND ${d} <= ${this.num(now)})`)
          : orFalse(sql`${d} < ${this.num(since)}`)
      }
      case 'data': return this.dataPredicate(p)
      case 'event': {
        switch (p.op) {
          case 'triggered': return this.eventTest(p.name, null, null)
          case 'notTriggered': return not(this.eventTest(p.name, null, null))
          case 'triggeredWithin': return this.eventTest(p.name, now - p.windowMs, null)
          case 'notTriggeredWithin': return not(this.eventTest(p.name, now - p.windowMs, null))
          case 'triggeredMoreThan': return this.eventTest(p.name, null, p.count)
        }
        break
      }
      case 'segment': {
        const test = this.segmentTest(p.segmentId)
        return p.op === 'memberOfSegment' ? test : not(test)
      }
    }
    return FALSE
  }

  private dataPredicate(p: Extract<Predicate, { kind: 'data' }>): SQL {
    switch (p.op) {
      case 'exists': return orFalse(sql`${this.jtype(p.path)} <> 'null'`)
      case 'notExists': return not(orFalse(sql`${this.jtype(p.path)} <> 'null'`))
      case 'contains': case 'notContains': {
        const s = this.text(p.value.s)
        const t = this.textOf(p.path)
        const test = orFalse(textContains(this.c, sql`lower(${t})`, sql`lower(${s})`))
        return p.op === 'contains' ? test : not(test)
      }
      default: {
        const v = p.value
        const op = p.op
        if (op === 'notEquals') return not(this.dataPredicate({ ...p, op: 'equals' } as typeof p))
        switch (v.type) {
          case 'string': return this.plainStringEquals(v.s) ? this.stringEquals(p.path, v.s) : orFalse(sql`${this.textOf(p.path)} = ${this.text(v.s)}`)
          case 'boolean': return orFalse(sql`${this.textOf(p.path)} = ${this.text(v.b ? 'true' : 'false')}`)
          case 'number': {
            const rel = op === 'equals' ? '=' : CMP[op]
            return orFalse(sql`${this.numberOf(p.path)} ${sql.raw(rel)} ${this.num(v.n)}`)
          }
          case 'date': return orFalse(this.compareDate(this.dateOf(p.path), op, v, (ms) => this.num(ms)))
        }
      }
    }
  }
}

/** The tree as one boolean SQL expression over `contacts` (the caller adds `contacts.project_id = ...`). */
export function compileTree(tree: CheckedTree, c: CompileContext): SQL {
  return new Compiler(c).tree(tree)
}
