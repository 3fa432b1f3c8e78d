import { useQuery } from '@tanstack/react-query'
import { useEffect, useId, useState } from 'react'
import { Link } from 'wouter'
import { get, post, type Project } from '../../api'
import { ErrorBox, fieldError } from '../../components/ui'
import type { Audience, AudienceCount, FieldInfo, FilterRow, FilterTree, Segment } from './types'
import { formatNumber } from '../../format'

/**
 * The audience of a campaign: everyone, a segment, or a filter (a small builder: conditions matched all or
 * any; the full segment filter builder lives with the segments pages), with the live recipient count of
 * POST /campaigns/audience/count.
 */

/** Operators that take no value, and those whose value is a time window (a number and a unit). */
const NO_VALUE = new Set(['exists', 'notExists', 'triggered', 'notTriggered'])
const WINDOW = new Set(['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin'])
const OP_LABELS: Record<string, string> = {
  equals: 'is', notEquals: 'is not', contains: 'contains', notContains: 'does not contain', greaterThan: 'is greater than',
  lessThan: 'is less than', greaterThanOrEqual: 'is at least', lessThanOrEqual: 'is at most', exists: 'is set', notExists: 'is not set',
  within: 'is within the last', olderThan: 'is older than', triggered: 'happened', notTriggered: 'never happened',
  triggeredWithin: 'happened within the last', notTriggeredWithin: 'did not happen within the last', triggeredMoreThan: 'happened more than (times)',
}

interface Row { field: string; operator: string; value: string; unit: string }

/** The value as the filter engine compares it: numbers and booleans typed when the field holds them. */
function typedValue(row: Row, info: FieldInfo | undefined): unknown {
  const v = row.value.trim()
  if (WINDOW.has(row.operator) || row.operator === 'triggeredMoreThan') return v === '' ? v : Number(v)
  if (info?.kind === 'subscribed') return v === 'true'
  if (info?.kind === 'emailActivity' && (row.operator === 'equals' || row.operator === 'notEquals')) return v === 'true'
  if (info?.types?.includes('number') && v !== '' && Number.isFinite(Number(v))) return Number(v)
  if (info?.types?.includes('boolean') && (v === 'true' || v === 'false')) return v === 'true'
  return v
}

export function toTree(rows: Row[], match: 'all' | 'any', fields: FieldInfo[]): FilterTree {
  const filters: FilterRow[] = rows.map((r) => {
    const info = fields.find((f) => f.field === r.field)
    const f: FilterRow = { field: r.field, operator: r.operator }
    if (!NO_VALUE.has(r.operator)) f.value = typedValue(r, info)
    if (WINDOW.has(r.operator)) f.unit = r.unit
    return f
  })
  return match === 'all' ? { logic: 'AND', groups: [{ filters }] } : { logic: 'OR', groups: filters.map((f) => ({ filters: [f] })) }
}

/** Rows of a tree this builder made (one AND group, or OR of one-filter groups); null for anything else. */
function fromTree(tree: FilterTree | null): { rows: Row[]; match: 'all' | 'any' } | null {
  if (!tree?.groups?.length) return null
  if (tree.groups.some((g) => g.conditions)) return null
  const rowOf = (f: FilterRow): Row => ({ field: f.field, operator: f.operator, value: f.value === undefined ? '' : String(f.value), unit: f.unit ?? 'days' })
  if ((tree.logic ?? 'AND') === 'AND' && tree.groups.length === 1) return { rows: (tree.groups[0].filters ?? []).map(rowOf), match: 'all' }
  if (tree.logic === 'OR' && tree.groups.every((g) => g.filters?.length === 1)) return { rows: tree.groups.map((g) => rowOf((g.filters ?? [])[0])), match: 'any' }
  return null
}

export function AudiencePicker({ project, value, onChange, error }: {
  project: Project; value: Audience; onChange: (a: Audience) => void; error: unknown
}) {
  const segments = useQuery({ queryKey: ['segments', project.id], queryFn: () => get<Segment[]>('/segments', project.id) })
  const fields = useQuery({ queryKey: ['filter-fields', project.id], queryFn: () => get<{ contact: FieldInfo[] }>('/workflows/fields', project.id) })
  const name = useId()
  const set = (over: Partial<Audience>) => onChange({ ...value, ...over })
  return (
    <fieldset className="card audience">
      <legend><h2>Audience</h2></legend>
      <div className="row" role="radiogroup" aria-label="Who receives it">
        {([['ALL', 'Every contact'], ['SEGMENT', 'A segment'], ['FILTERED', 'Contacts matching a filter']] as const).map(([v, label]) => (
          <div className="check" key={v}>
            <input type="radio" id={`${name}-${v}`} name={name} value={v} checked={value.audienceType === v} onChange={() => set({ audienceType: v })} />
            <label htmlFor={`${name}-${v}`}>{label}</label>
          </div>
        ))}
      </div>
      {value.audienceType === 'SEGMENT' && (
        <div className="field">
          <span><label htmlFor={`${name}-segment`}>Segment</label></span>
          <select id={`${name}-segment`} value={value.segmentId ?? ''} onChange={(e) => set({ segmentId: e.target.value || null })}
            aria-invalid={fieldError(error, 'segmentId') ? true : undefined} aria-describedby={fieldError(error, 'segmentId') ? `${name}-segment-err` : undefined}>
            <option value="">Choose a segment…</option>
            {segments.data?.map((s) => <option key={s.id} value={s.id}>{s.name} ({formatNumber(s.memberCount)})</option>)}
          </select>
          {fieldError(error, 'segmentId') && <span id={`${name}-segment-err`} className="err">{fieldError(error, 'segmentId')}</span>}
          {segments.data?.length === 0 && <span className="hint">No segments yet: <Link href="/segments">create one</Link>, or use a filter.</span>}
        </div>
      )}
      {value.audienceType === 'FILTERED' && (
        fields.data
          ? <FilterBuilder fields={fields.data.contact} tree={value.audienceCondition} onTree={(t) => set({ audienceCondition: t })} error={fieldError(error, 'audienceCondition')} />
          : <ErrorBox error={fields.error} />
      )}
      <AudienceSize project={project} audience={value} />
    </fieldset>
  )
}

function FilterBuilder({ fields, tree, onTree, error }: { fields: FieldInfo[]; tree: FilterTree | null; onTree: (t: FilterTree) => void; error?: string }) {
  const blank = (): Row => ({ field: fields[0]?.field ?? 'email', operator: fields[0]?.operators[0] ?? 'equals', value: '', unit: 'days' })
  const [initial] = useState(() => fromTree(tree))
  const [foreign, setForeign] = useState(() => !initial && !!tree?.groups?.length)
  const [rows, setRows] = useState<Row[]>(() => (initial?.rows.length ? initial.rows : [blank()]))
  const [match, setMatch] = useState<'all' | 'any'>(initial?.match ?? 'all')
  const id = useId()
  const update = (next: Row[], m = match) => { setRows(next); onTree(toTree(next, m, fields)) }
  const change = (i: number, over: Partial<Row>) => {
    update(rows.map((r, j) => {
      if (j !== i) return r
      const n = { ...r, ...over }
      if (over.field) {
        const ops = fields.find((f) => f.field === over.field)?.operators ?? []
        if (!ops.includes(n.operator)) n.operator = ops[0] ?? 'equals'
      }
      return n
    }))
  }
  if (foreign) {
    return <p className="small">This audience's filter was built elsewhere (nested groups); it is kept as it is. <button type="button" className="link" onClick={() => { setForeign(false); update([blank()]) }}>Start a new filter</button></p>
  }
  return (
    <div className="filter-builder" aria-describedby={error ? `${id}-err` : undefined}>
      <div className="row">
        <div className="field">
          <span><label htmlFor={`${id}-match`}>Contacts matching</label></span>
          <select id={`${id}-match`} value={match} onChange={(e) => { const m = e.target.value as 'all' | 'any'; setMatch(m); update(rows, m) }}>
            <option value="all">all of these conditions</option>
            <option value="any">any of these conditions</option>
          </select>
        </div>
      </div>
      <ol className="conditions">
        {rows.map((r, i) => {
          const info = fields.find((f) => f.field === r.field)
          const n = i + 1
          return (
            // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their place
            <li key={i} className="row">
              <div className="field">
                <span><label htmlFor={`${id}-f${i}`}>Field {n}</label></span>
                <select id={`${id}-f${i}`} value={r.field} onChange={(e) => change(i, { field: e.target.value })}>
                  {!info && <option value={r.field}>{r.field}</option>}
                  {fields.map((f) => <option key={f.field} value={f.field}>{f.kind === 'data' ? `data: ${f.label}` : f.kind === 'event' ? `event: ${f.label}` : f.label}</option>)}
                </select>
              </div>
              <div className="field">
                <span><label htmlFor={`${id}-o${i}`}>Condition {n}</label></span>
                <select id={`${id}-o${i}`} value={r.operator} onChange={(e) => change(i, { operator: e.target.value })}>
                  {(info?.operators ?? [r.operator]).map((o) => <option key={o} value={o}>{OP_LABELS[o] ?? o}</option>)}
                </select>
              </div>
              {!NO_VALUE.has(r.operator) && (
                (info?.kind === 'subscribed' || (info?.kind === 'emailActivity' && (r.operator === 'equals' || r.operator === 'notEquals')))
                  ? (
                    <div className="field">
                      <span><label htmlFor={`${id}-v${i}`}>Value {n}</label></span>
                      <select id={`${id}-v${i}`} value={r.value || 'true'} onChange={(e) => change(i, { value: e.target.value })}>
                        <option value="true">yes</option><option value="false">no</option>
                      </select>
                    </div>
                  ) : (
                    <div className="field">
                      <span><label htmlFor={`${id}-v${i}`}>Value {n}</label></span>
                      <input id={`${id}-v${i}`} value={r.value} inputMode={WINDOW.has(r.operator) || r.operator === 'triggeredMoreThan' ? 'numeric' : undefined}
                        onChange={(e) => change(i, { value: e.target.value })} aria-invalid={error ? true : undefined} />
                    </div>
                  )
              )}
              {WINDOW.has(r.operator) && (
                <div className="field">
                  <span><label htmlFor={`${id}-u${i}`}>Unit {n}</label></span>
                  <select id={`${id}-u${i}`} value={r.unit} onChange={(e) => change(i, { unit: e.target.value })}>
                    <option value="minutes">minutes</option><option value="hours">hours</option><option value="days">days</option>
                  </select>
                </div>
              )}
              <button type="button" className="secondary small" aria-label={`Remove condition ${n}`} disabled={rows.length === 1} onClick={() => update(rows.filter((_, j) => j !== i))}>Remove</button>
            </li>
          )
        })}
      </ol>
      <button type="button" className="secondary small" onClick={() => update([...rows, blank()])}>Add a condition</button>
      {error && <p id={`${id}-err`} className="err" role="alert">{error}</p>}
    </div>
  )
}

/** The audience is complete enough to count (a segment chosen, a filter with at least one condition). */
export function countable(a: Audience): boolean {
  if (a.audienceType === 'SEGMENT') return !!a.segmentId
  if (a.audienceType === 'FILTERED') return !!a.audienceCondition?.groups?.some((g) => g.filters?.length)
  return true
}

/** The live recipient count; re-asked a moment after the audience stops changing. */
export function useAudienceCount(project: Project, audience: Audience, enabled = true) {
  const [settled, setSettled] = useState(audience)
  useEffect(() => {
    const t = setTimeout(() => setSettled(audience), 400)
    return () => clearTimeout(t)
  }, [audience])
  const body = { type: settled.type, audienceType: settled.audienceType, segmentId: settled.segmentId, audienceCondition: settled.audienceCondition ?? undefined }
  return useQuery({
    queryKey: ['audience-count', project.id, JSON.stringify(body)],
    queryFn: () => post<AudienceCount>('/campaigns/audience/count', body, project.id),
    enabled: enabled && countable(settled),
    staleTime: 5_000,
  })
}

function AudienceSize({ project, audience }: { project: Project; audience: Audience }) {
  const count = useAudienceCount(project, audience)
  // The count of the audience as it was a moment ago is not shown for one that cannot be counted yet.
  const n = countable(audience) ? count.data : undefined
  return (
    <div className="audience-size" aria-live="polite">
      {!countable(audience) && <p className="muted small">Complete the audience to see how many contacts it reaches.</p>}
      {countable(audience) && count.isPending && <p className="muted small">Counting…</p>}
      {count.error && countable(audience) ? <p className="err small">The audience cannot be counted yet: {(count.error as Error).message}</p> : null}
      {n && (
        <p data-testid="audience-count">
          <strong>{formatNumber(n.recipients)}</strong> recipient{n.recipients === 1 ? '' : 's'} now
          <span className="muted"> · {formatNumber(n.matching)} matching, {formatNumber(n.skippedUnsubscribed)} skipped as unsubscribed, {formatNumber(n.skippedSuppressed)} skipped as suppressed</span>
        </p>
      )}
    </div>
  )
}
