import { ApiError } from '../../api'
import { currentLang, type MessageKey, t } from '../../i18n'
import { en } from '../../i18n/en'

/** A label inside a sentence: English lowers it ("Remove group 1"); German keeps its nouns capitalised. */
const lower = (s: string) => (currentLang() === 'en' ? s.toLowerCase() : s)

/**
 * The filter builder: every field and operator of the filter engine (docs/decisions.md, Segment and audience
 * filters). A tree's `logic` joins its groups; a group ANDs its conditions and its nested tree. The builder
 * edits a UI form of the tree (typed raw values, stable keys) and turns it into the API's shape with toApi.
 */

export interface ApiFilter { field: string; operator: string; value?: unknown; unit?: string }
export interface ApiGroup { filters?: ApiFilter[]; conditions?: ApiTree }
export interface ApiTree { logic?: string; groups: ApiGroup[] }

export type Kind = 'email' | 'subscribed' | 'date' | 'data' | 'event' | 'emailActivity' | 'segment'
/** One entry of GET /workflows/fields (`contact`): the field catalogue of the filter engine. */
export interface FieldInfo { field: string; label: string; kind: Kind; types?: string[]; operators: string[] }

export type VType = 'text' | 'number' | 'boolean' | 'date'
export interface Row { id: number; field: string; operator: string; raw: string; unit: string; vtype: VType; custom: boolean }
export interface Group { id: number; filters: Row[]; conditions: Tree | null }
export interface Tree { id: number; logic: 'AND' | 'OR'; groups: Group[] }

/** Deepest nesting the engine accepts (the root is 1). */
const MAX_DEPTH = 5
const UNITS = ['minutes', 'hours', 'days'] as const

const EVENT_OPS = ['triggered', 'notTriggered', 'triggeredWithin', 'notTriggeredWithin', 'triggeredMoreThan']
export const OPERATORS: Record<Kind, string[]> = {
  email: ['equals', 'notEquals', 'contains', 'notContains'],
  subscribed: ['equals', 'notEquals'],
  date: ['within', 'olderThan', 'equals', 'notEquals', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'],
  data: ['equals', 'notEquals', 'contains', 'notContains', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'exists', 'notExists', 'within', 'olderThan'],
  event: EVENT_OPS,
  emailActivity: [...EVENT_OPS, 'equals', 'notEquals'],
  segment: ['memberOfSegment', 'notMemberOfSegment'],
}

const WINDOW_OPS = new Set(['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin'])
const NO_VALUE_OPS = new Set(['exists', 'notExists', 'triggered', 'notTriggered', 'memberOfSegment', 'notMemberOfSegment'])

export function opLabel(kind: Kind, op: string): string {
  const dated = kind === 'date'
  const has = (key: string) => key in en
  if (kind === 'emailActivity' && has(`b.opYesNo.${op}`)) return t(`b.opYesNo.${op}` as MessageKey)
  if (dated && has(`b.opDate.${op}`)) return t(`b.opDate.${op}` as MessageKey)
  if (has(`b.op.${op}`)) return t(`b.op.${op}` as MessageKey)
  return has(`op.${op}`) ? t(`op.${op}` as MessageKey) : op
}

export function kindOf(field: string): Kind | null {
  if (field === 'email') return 'email'
  if (field === 'subscribed') return 'subscribed'
  if (field === 'createdAt' || field === 'updatedAt') return 'date'
  if (field === 'email.opened' || field === 'email.clicked' || field === 'email.bounced') return 'emailActivity'
  if (field.startsWith('data.')) return 'data'
  if (field.startsWith('event.')) return 'event'
  if (field.startsWith('segment.')) return 'segment'
  return null
}

let nextId = 1
const id = () => nextId++

export function emptyRow(field = 'email'): Row {
  return { id: id(), field, operator: 'contains', raw: '', unit: 'days', vtype: 'text', custom: false }
}
export function emptyGroup(): Group { return { id: id(), filters: [emptyRow()], conditions: null } }
export function emptyTree(logic: 'AND' | 'OR' = 'AND'): Tree { return { id: id(), logic, groups: [emptyGroup()] } }

const NUMERIC = /^\s*-?\d+(\.\d+)?\s*$/
const DAY = /^\d{4}-\d{2}-\d{2}$/

function rowFrom(f: ApiFilter, known: Set<string>): Row {
  const kind = kindOf(f.field)
  let vtype: VType = 'text'
  let raw = ''
  if (typeof f.value === 'number') { vtype = 'number'; raw = String(f.value) }
  else if (typeof f.value === 'boolean') { vtype = 'boolean'; raw = String(f.value) }
  else if (typeof f.value === 'string') { raw = f.value; vtype = DAY.test(f.value) ? 'date' : 'text' }
  const custom = (kind === 'data' || kind === 'event') && !known.has(f.field)
  return { id: id(), field: f.field, operator: f.operator, raw, unit: f.unit ?? 'days', vtype, custom }
}

/** The API's tree as the builder's form; `known`: the fields of the catalogue (others get a free text input). */
export function fromApi(t: ApiTree | null | undefined, known: Set<string>): Tree {
  if (!t || !Array.isArray(t.groups)) return emptyTree()
  return {
    id: id(), logic: t.logic === 'OR' ? 'OR' : 'AND',
    groups: t.groups.map((g) => ({ id: id(), filters: (g.filters ?? []).map((f) => rowFrom(f, known)), conditions: g.conditions ? fromApi(g.conditions, known) : null })),
  }
}

function numberOr(raw: string): number | string {
  return NUMERIC.test(raw) ? Number(raw) : raw
}

/** The value a row sends: typed as the kind and operator want; what does not parse goes as typed, for the API to name. */
function filterOf(r: Row): ApiFilter {
  const kind = kindOf(r.field)
  const out: ApiFilter = { field: r.field, operator: r.operator }
  if (NO_VALUE_OPS.has(r.operator)) return out
  if (WINDOW_OPS.has(r.operator)) return { ...out, value: numberOr(r.raw), unit: r.unit }
  if (r.operator === 'triggeredMoreThan') return { ...out, value: numberOr(r.raw) }
  if (kind === 'subscribed' || kind === 'emailActivity') return { ...out, value: r.raw !== 'false' }
  if (kind === 'data') {
    const vt = valueTypes(r.operator).includes(r.vtype) ? r.vtype : valueTypes(r.operator)[0]
    if (vt === 'number') return { ...out, value: numberOr(r.raw) }
    if (vt === 'boolean') return { ...out, value: r.raw !== 'false' }
  }
  return { ...out, value: r.raw }
}

export function toApi(t: Tree): ApiTree {
  return {
    logic: t.logic,
    groups: t.groups.map((g) => ({ filters: g.filters.map(filterOf), ...(g.conditions ? { conditions: toApi(g.conditions) } : {}) })),
  }
}

/** The value types a data field's operator takes. */
export function valueTypes(op: string): VType[] {
  if (op === 'contains' || op === 'notContains') return ['text']
  if (op.startsWith('greaterThan') || op.startsWith('lessThan')) return ['number', 'date']
  return ['text', 'number', 'boolean', 'date']
}

/** Every condition's path in the request body (`condition.groups.0.filters.1`), for the error box. */
export function rowPaths(t: Tree, path = 'condition', out: string[] = []): string[] {
  t.groups.forEach((g, gi) => {
    for (let fi = 0; fi < g.filters.length; fi++) out.push(`${path}.groups.${gi}.filters.${fi}`)
    if (g.conditions) rowPaths(g.conditions, `${path}.groups.${gi}.conditions`, out)
  })
  return out
}

interface Ctx {
  fields: FieldInfo[]
  error: unknown
  /** The segment being edited: it cannot refer to itself. */
  selfId?: string
}

function errorsAt(error: unknown, path: string): Array<{ field: string; message: string }> {
  if (!(error instanceof ApiError)) return []
  return error.fields.filter((f) => f.field === path || f.field.startsWith(`${path}.`))
}

/** The builder of one tree (the root, or the nested tree of a group). */
export function TreeEditor({ tree, onChange, path, label, depth, ctx }: {
  tree: Tree; onChange: (t: Tree) => void; path: string; label: string; depth: number; ctx: Ctx
}) {
  const setGroup = (gi: number, g: Group | null) => onChange({ ...tree, groups: g ? tree.groups.map((x, i) => (i === gi ? g : x)) : tree.groups.filter((_, i) => i !== gi) })
  return (
    <div className={`tree depth-${depth}`}>
      <div className="row tree-logic">
        <span>{t('b.contactsMatch')}</span>
        <select aria-label={label ? t('b.matchOf', { label }) : t('b.match')} value={tree.logic} onChange={(e) => onChange({ ...tree, logic: e.target.value as 'AND' | 'OR' })}>
          <option value="AND">{t('b.all')}</option>
          <option value="OR">{t('b.any')}</option>
        </select>
      </div>
      {tree.groups.length === 0 && <p className="muted small">{t('b.noGroups')}</p>}
      {tree.groups.map((g, gi) => {
        const groupLabel = label ? t('b.nestedGroup', { label, n: String(gi + 1) }) : t('b.group', { n: String(gi + 1) })
        return (
          <fieldset className="group" key={g.id}>
            <legend>{groupLabel}{tree.groups.length > 1 && <span className="muted"> — {tree.logic === 'AND' ? t('b.and') : t('b.or')}</span>}</legend>
            {g.filters.length + (g.conditions ? 1 : 0) > 1 && <p className="muted small">{t('b.allHold')}</p>}
            {g.filters.map((r, fi) => (
              <RowEditor key={r.id} row={r} ctx={ctx} path={`${path}.groups.${gi}.filters.${fi}`} label={t('b.condition', { group: groupLabel, n: String(fi + 1) })}
                onChange={(nr) => setGroup(gi, { ...g, filters: nr ? g.filters.map((x, i) => (i === fi ? nr : x)) : g.filters.filter((_, i) => i !== fi) })} />
            ))}
            {g.conditions && (
              <div className="nested">
                <TreeEditor tree={g.conditions} path={`${path}.groups.${gi}.conditions`} label={groupLabel} depth={depth + 1} ctx={ctx}
                  onChange={(c) => setGroup(gi, { ...g, conditions: c })} />
                <button type="button" className="secondary small" onClick={() => setGroup(gi, { ...g, conditions: null })}>{t('b.removeNested', { group: lower(groupLabel) })}</button>
              </div>
            )}
            <div className="row group-actions">
              <button type="button" className="secondary small" onClick={() => setGroup(gi, { ...g, filters: [...g.filters, emptyRow()] })} aria-label={t('b.addConditionTo', { group: lower(groupLabel) })}>{t('b.addCondition')}</button>
              {!g.conditions && depth < MAX_DEPTH && (
                <button type="button" className="secondary small" onClick={() => setGroup(gi, { ...g, conditions: emptyTree('OR') })} aria-label={t('b.addNestedTo', { group: lower(groupLabel) })}>{t('b.addNested')}</button>
              )}
              <button type="button" className="secondary small" onClick={() => setGroup(gi, null)} aria-label={t('b.removeGroupOf', { group: lower(groupLabel) })}>{t('b.removeGroup')}</button>
            </div>
          </fieldset>
        )
      })}
      <button type="button" className="secondary small" onClick={() => onChange({ ...tree, groups: [...tree.groups, emptyGroup()] })}>
        {label ? t('b.addNestedGroupTo', { label: lower(label) }) : t('b.addGroup')}
      </button>
    </div>
  )
}

function RowEditor({ row, onChange, path, label, ctx }: { row: Row; onChange: (r: Row | null) => void; path: string; label: string; ctx: Ctx }) {
  const kind = kindOf(row.field)
  const errs = errorsAt(ctx.error, path)
  const errAt = (part: string) => errs.some((e) => e.field === `${path}.${part}`)
  const errId = `err-${row.id}`
  const invalid = (part: string) => ({ 'aria-invalid': errAt(part) ? true : undefined, 'aria-describedby': errs.length ? errId : undefined })
  const known = ctx.fields.filter((f) => f.field !== `segment.${ctx.selfId}`)
  const byKind = (k: Kind[]) => known.filter((f) => k.includes(f.kind))
  const selectValue = row.custom ? (kind === 'event' ? '__event' : '__data') : row.field
  const setField = (field: string, custom: boolean) => {
    const k = kindOf(field)
    const ops = k ? OPERATORS[k] : []
    const info = ctx.fields.find((f) => f.field === field)
    const ty = info?.types ?? []
    const vtype: VType = ty.includes('number') ? 'number' : ty.includes('boolean') ? 'boolean' : ty.includes('date') && !ty.includes('string') ? 'date' : 'text'
    const operator = ops.includes(row.operator) ? row.operator : ops[0] ?? ''
    onChange({ ...row, field, custom, operator, vtype, raw: k === 'subscribed' || (k === 'data' && vtype === 'boolean') ? 'true' : row.raw })
  }
  const onSelect = (v: string) => {
    if (v === '__data') setField('data.', true)
    else if (v === '__event') setField('event.', true)
    else setField(v, false)
  }
  const set = (p: Partial<Row>) => onChange({ ...row, ...p })
  const ops = kind ? OPERATORS[kind] : []
  return (
    <fieldset className={`filter-row${errs.length ? ' invalid' : ''}`}>
      <legend className="sr-only">{label}</legend>
      <div className="row">
        <select aria-label={t('b.field', { label })} value={selectValue} onChange={(e) => onSelect(e.target.value)} {...invalid('field')}>
          {!kind && <option value={row.field}>{row.field || t('b.chooseField')}</option>}
          <optgroup label={t('b.contact')}>
            {byKind(['email', 'subscribed', 'date']).map((f) => <option key={f.field} value={f.field}>{f.label}</option>)}
          </optgroup>
          <optgroup label={t('b.customFields')}>
            {byKind(['data']).map((f) => <option key={f.field} value={f.field}>{f.label}{f.types?.length ? ` (${f.types.join(', ')})` : ''}</option>)}
            <option value="__data">{t('b.anotherField')}</option>
          </optgroup>
          <optgroup label={t('b.events')}>
            {byKind(['event']).map((f) => <option key={f.field} value={f.field}>{t('b.event', { name: f.label })}</option>)}
            <option value="__event">{t('b.anotherEvent')}</option>
          </optgroup>
          <optgroup label={t('b.emailActivity')}>
            {byKind(['emailActivity']).map((f) => <option key={f.field} value={f.field}>{f.label}</option>)}
          </optgroup>
          {byKind(['segment']).length > 0 && (
            <optgroup label={t('b.segments')}>
              {byKind(['segment']).map((f) => <option key={f.field} value={f.field}>{t('b.segment', { name: f.label })}</option>)}
            </optgroup>
          )}
        </select>
        {row.custom && kind === 'data' && (
          <input aria-label={t('b.customKey', { label })} placeholder={t('b.customKeyPlaceholder')} value={row.field.slice(5)} onChange={(e) => set({ field: `data.${e.target.value}` })} {...invalid('field')} />
        )}
        {row.custom && kind === 'event' && (
          <input aria-label={t('b.eventName', { label })} placeholder="signed-up" value={row.field.slice(6)} onChange={(e) => set({ field: `event.${e.target.value}` })} {...invalid('field')} />
        )}
        {kind && (
          <select aria-label={t('b.operator', { label })} value={row.operator} onChange={(e) => set({ operator: e.target.value })} {...invalid('operator')}>
            {!ops.includes(row.operator) && <option value={row.operator}>{row.operator || t('b.choose')}</option>}
            {ops.map((op) => <option key={op} value={op}>{opLabel(kind, op)}</option>)}
          </select>
        )}
        {kind && <ValueEditor row={row} kind={kind} label={label} set={set} invalid={invalid} />}
        <button type="button" className="secondary small" onClick={() => onChange(null)} aria-label={t('b.removeThe', { what: lower(label) })}>{t('b.remove')}</button>
      </div>
      {errs.length > 0 && <ul id={errId} className="err">{errs.map((e) => <li key={e.field + e.message}>{e.message.replace(/^[\w.]+: /, '')}</li>)}</ul>}
    </fieldset>
  )
}

type Invalid = (part: string) => Record<string, unknown>

function ValueEditor({ row, kind, label, set, invalid }: { row: Row; kind: Kind; label: string; set: (p: Partial<Row>) => void; invalid: Invalid }) {
  const op = row.operator
  if (NO_VALUE_OPS.has(op)) return null
  if (WINDOW_OPS.has(op)) {
    return (
      <>
        <input aria-label={t('b.howMany', { label })} type="number" min={1} inputMode="numeric" className="num" value={row.raw} onChange={(e) => set({ raw: e.target.value })} {...invalid('value')} />
        <select aria-label={t('b.unit', { label })} value={row.unit} onChange={(e) => set({ unit: e.target.value })} {...invalid('unit')}>
          {UNITS.map((u) => <option key={u} value={u}>{t(`b.unit.${u}`)}</option>)}
        </select>
      </>
    )
  }
  if (op === 'triggeredMoreThan') {
    return <input aria-label={t('b.times', { label })} type="number" min={0} inputMode="numeric" className="num" value={row.raw} onChange={(e) => set({ raw: e.target.value })} {...invalid('value')} />
  }
  if (kind === 'subscribed' || kind === 'emailActivity') {
    return (
      <select aria-label={t('b.value', { label })} value={row.raw === 'false' ? 'false' : 'true'} onChange={(e) => set({ raw: e.target.value })} {...invalid('value')}>
        <option value="true">{t('b.yes')}</option><option value="false">{t('b.no')}</option>
      </select>
    )
  }
  if (kind === 'date') {
    return <input aria-label={t('b.date', { label })} type="date" value={row.raw} onChange={(e) => set({ raw: e.target.value })} {...invalid('value')} />
  }
  if (kind === 'email') {
    return <input aria-label={t('b.value', { label })} value={row.raw} placeholder="@example.com" onChange={(e) => set({ raw: e.target.value })} {...invalid('value')} />
  }
  // A custom field: the type of the value picks how it compares (numbers as numbers, dates as dates).
  const types = valueTypes(op)
  const vt = types.includes(row.vtype) ? row.vtype : types[0]
  return (
    <>
      {types.length > 1 && (
        <select aria-label={t('b.valueType', { label })} value={vt} onChange={(e) => set({ vtype: e.target.value as VType, raw: e.target.value === 'boolean' ? 'true' : row.raw })}>
          {types.map((ty) => <option key={ty} value={ty}>{t(`b.vtype.${ty}`)}</option>)}
        </select>
      )}
      {vt === 'boolean' ? (
        <select aria-label={t('b.value', { label })} value={row.raw === 'false' ? 'false' : 'true'} onChange={(e) => set({ raw: e.target.value })} {...invalid('value')}>
          <option value="true">{t('b.yes')}</option><option value="false">{t('b.no')}</option>
        </select>
      ) : vt === 'date' ? (
        <input aria-label={t('b.value', { label })} type="date" value={row.raw} onChange={(e) => set({ raw: e.target.value })} {...invalid('value')} />
      ) : (
        <input aria-label={t('b.value', { label })} inputMode={vt === 'number' ? 'decimal' : undefined} value={row.raw} onChange={(e) => set({ raw: e.target.value })} {...invalid('value')} />
      )}
    </>
  )
}
