import { useQuery } from '@tanstack/react-query'
import { useEffect, useId, useState } from 'react'
import { Link } from 'wouter'
import { get, post, type Project } from '../../api'
import { ErrorBox, fieldError, FormField } from '../../components/ui'
import type { Audience, AudienceCount, FieldInfo, FilterRow, FilterTree, Segment } from './types'
import { formatNumber } from '../../format'
import { type MessageKey, t } from '../../i18n'

/**
 * The audience of a campaign: everyone, a segment, or a filter (a small builder: conditions matched all or
 * any; the full segment filter builder lives with the segments pages), with the live recipient count of
 * POST /campaigns/audience/count.
 */

/** Operators that take no value, and those whose value is a time window (a number and a unit). */
const NO_VALUE = new Set(['exists', 'notExists', 'triggered', 'notTriggered'])
const WINDOW = new Set(['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin'])
const OP_LABELS: Record<string, MessageKey> = {
  equals: 'op.equals',
  notEquals: 'op.notEquals',
  contains: 'op.contains',
  notContains: 'op.notContains',
  greaterThan: 'op.greaterThan',
  lessThan: 'op.lessThan',
  greaterThanOrEqual: 'op.greaterThanOrEqual',
  lessThanOrEqual: 'op.lessThanOrEqual',
  exists: 'op.exists',
  notExists: 'op.notExists',
  within: 'op.within',
  olderThan: 'op.olderThan',
  triggered: 'op.triggered',
  notTriggered: 'op.notTriggered',
  triggeredWithin: 'op.triggeredWithin',
  notTriggeredWithin: 'op.notTriggeredWithin',
  triggeredMoreThan: 'op.triggeredMoreThan',
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
      <legend><h2>{t('campaigns.audience')}</h2></legend>
      <div className="row" role="radiogroup" aria-label={t('audience.who')}>
        {([['ALL', 'campaigns.audienceAll'], ['SEGMENT', 'campaigns.audienceSegment'], ['FILTERED', 'audience.filtered']] as const).map(([v, label]) => (
          <div className="check" key={v}>
            <input type="radio" id={`${name}-${v}`} name={name} value={v} checked={value.audienceType === v} onChange={() => set({ audienceType: v })} />
            <label htmlFor={`${name}-${v}`}>{t(label)}</label>
          </div>
        ))}
      </div>
      {value.audienceType === 'SEGMENT' && (
        <FormField label={t('bulk.segment')} id={`${name}-segment`} error={fieldError(error, 'segmentId')}
          hint={segments.data?.length === 0 ? <>{t('audience.noSegments1')}<Link href="/segments">{t('audience.noSegments2')}</Link>{t('audience.noSegments3')}</> : undefined}>
          {(c) => (
            <select {...c} value={value.segmentId ?? ''} onChange={(e) => set({ segmentId: e.target.value || null })}>
              <option value="">{t('audience.chooseSegment')}</option>
              {segments.data?.map((s) => <option key={s.id} value={s.id}>{s.name} ({formatNumber(s.memberCount)})</option>)}
            </select>
          )}
        </FormField>
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
    return <p className="small">{t('audience.foreign')} <button type="button" className="link" onClick={() => { setForeign(false); update([blank()]) }}>{t('audience.newFilter')}</button></p>
  }
  return (
    <div className="filter-builder" aria-describedby={error ? `${id}-err` : undefined}>
      <div className="row">
        <FormField label={t('audience.matching')} id={`${id}-match`}>
          {(c) => (
            <select {...c} value={match} onChange={(e) => { const m = e.target.value as 'all' | 'any'; setMatch(m); update(rows, m) }}>
              <option value="all">{t('audience.all')}</option>
              <option value="any">{t('audience.any')}</option>
            </select>
          )}
        </FormField>
      </div>
      <ol className="conditions">
        {rows.map((r, i) => {
          const info = fields.find((f) => f.field === r.field)
          const n = i + 1
          return (
            // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their place
            <li key={i} className="row">
              <FormField label={t('audience.field', { n: String(n) })} id={`${id}-f${i}`}>
                {(c) => (
                  <select {...c} value={r.field} onChange={(e) => change(i, { field: e.target.value })}>
                    {!info && <option value={r.field}>{r.field}</option>}
                    {fields.map((f) => <option key={f.field} value={f.field}>{f.kind === 'data' ? `data: ${f.label}` : f.kind === 'event' ? `event: ${f.label}` : f.label}</option>)}
                  </select>
                )}
              </FormField>
              <FormField label={t('audience.condition', { n: String(n) })} id={`${id}-o${i}`}>
                {(c) => (
                  <select {...c} value={r.operator} onChange={(e) => change(i, { operator: e.target.value })}>
                    {(info?.operators ?? [r.operator]).map((o) => <option key={o} value={o}>{OP_LABELS[o] ? t(OP_LABELS[o]) : o}</option>)}
                  </select>
                )}
              </FormField>
              {!NO_VALUE.has(r.operator) && (
                (info?.kind === 'subscribed' || (info?.kind === 'emailActivity' && (r.operator === 'equals' || r.operator === 'notEquals')))
                  ? (
                    <FormField label={t('audience.value', { n: String(n) })} id={`${id}-v${i}`}>
                      {(c) => (
                        <select {...c} value={r.value || 'true'} onChange={(e) => change(i, { value: e.target.value })}>
                          <option value="true">{t('audience.yes')}</option><option value="false">{t('audience.no')}</option>
                        </select>
                      )}
                    </FormField>
                  ) : (
                    <FormField label={t('audience.value', { n: String(n) })} id={`${id}-v${i}`} invalid={!!error}>
                      {(c) => (
                        <input {...c} value={r.value} inputMode={WINDOW.has(r.operator) || r.operator === 'triggeredMoreThan' ? 'numeric' : undefined}
                          onChange={(e) => change(i, { value: e.target.value })} />
                      )}
                    </FormField>
                  )
              )}
              {WINDOW.has(r.operator) && (
                <FormField label={t('audience.unit', { n: String(n) })} id={`${id}-u${i}`}>
                  {(c) => (
                    <select {...c} value={r.unit} onChange={(e) => change(i, { unit: e.target.value })}>
                      <option value="minutes">{t('audience.minutes')}</option><option value="hours">{t('audience.hours')}</option><option value="days">{t('audience.days')}</option>
                    </select>
                  )}
                </FormField>
              )}
              <button type="button" className="secondary small" aria-label={t('audience.removeN', { n: String(n) })} disabled={rows.length === 1} onClick={() => update(rows.filter((_, j) => j !== i))}>{t('audience.remove')}</button>
            </li>
          )
        })}
      </ol>
      <button type="button" className="secondary small" onClick={() => update([...rows, blank()])}>{t('audience.add')}</button>
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
      {!countable(audience) && <p className="muted small">{t('audience.incomplete')}</p>}
      {countable(audience) && count.isPending && <p className="muted small">{t('contacts.counting')}</p>}
      {count.error && countable(audience) ? <p className="err small">{t('audience.cannotCount', { message: (count.error as Error).message })}</p> : null}
      {n && (
        <p data-testid="audience-count">
          <strong>{formatNumber(n.recipients)}</strong> {t('audience.recipientsNow', { count: n.recipients })}
          <span className="muted"> · {t('audience.counts', { matching: formatNumber(n.matching), unsubscribed: formatNumber(n.skippedUnsubscribed), suppressed: formatNumber(n.skippedSuppressed) })}</span>
        </p>
      )}
    </div>
  )
}
