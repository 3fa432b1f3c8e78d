import { useId } from 'react'
import { FormField } from '../../components/ui'
import { kindOf, opLabel } from '../segments/builder'
import type { ConditionField, Values } from './forms'
import { amountOf } from './graph'
import { formatNumber } from '../../format'
import { type MessageKey, t } from '../../i18n'

/**
 * A CONDITION step's form for marketers: the field is picked by name from the project's
 * contact fields, its events and the trigger event, never typed as a path (`data.plan`); operators read as
 * words ("is at least", "happened within the last"); the value input fits the field (yes/no, a number, a
 * date, a number of days). The step's config stays the API's: `{field, operator, value?, unit?}`.
 */

const NO_VALUE = new Set(['exists', 'notExists', 'triggered', 'notTriggered', 'memberOfSegment', 'notMemberOfSegment'])
const WINDOWED = new Set(['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin'])
const COMPARE = ['equals', 'notEquals', 'contains', 'notContains', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'exists', 'notExists']
/** The picker's entries that need a name typed after them (the trigger event's data, the test run's context). */
const EVENT_DATA = '__event-data'
const CONTEXT = '__context'

export type ValueType = 'text' | 'number' | 'boolean' | 'date'
type Kind = NonNullable<ReturnType<typeof kindOf>> | 'context'

function kindOfField(field: string): Kind | null {
  return field.startsWith('context.') ? 'context' : kindOf(field)
}

/** The operators a field takes (the catalogue's, else its kind's). */
function operatorsOf(field: string, fields: ConditionField[]): string[] {
  const known = fields.find((f) => f.field === field)
  if (known) return known.operators
  if (field.startsWith('context.')) return COMPARE
  if (field.startsWith('data.')) return [...COMPARE, 'within', 'olderThan']
  if (field.startsWith('event.')) return ['triggered', 'notTriggered', 'triggeredWithin', 'notTriggeredWithin', 'triggeredMoreThan']
  return []
}

const NUMERIC_WORDS = new Set(['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'])

/** The operator in words for a field (a field known to hold numbers gets plain number words). */
export function operatorWords(field: string, op: string, fields: ConditionField[] = []): string {
  const kind = kindOfField(field)
  const types = (fields.find((f) => f.field === field) as (ConditionField & { types?: string[] }) | undefined)?.types
  if (types?.length === 1 && types[0] === 'number' && NUMERIC_WORDS.has(op)) return t(`wfc.num.${op}` as MessageKey)
  return opLabel(kind === 'context' || kind === null ? 'data' : kind, op)
}

/** The value input a field and operator want. */
export function valueTypeOf(field: string, op: string, fields: ConditionField[]): ValueType {
  const kind = kindOfField(field)
  if (WINDOWED.has(op) || op === 'triggeredMoreThan') return 'number'
  if (kind === 'subscribed' || kind === 'emailActivity') return 'boolean'
  if (kind === 'date') return 'date'
  if (kind === 'data') {
    if (op === 'contains' || op === 'notContains') return 'text'
    const types = (fields.find((f) => f.field === field) as (ConditionField & { types?: string[] }) | undefined)?.types ?? []
    if (types.length === 1 && types[0] === 'number') return 'number'
    if (types.length === 1 && types[0] === 'boolean') return 'boolean'
  }
  return 'text'
}

const STANDARD = ['email', 'subscribed', 'createdAt', 'updatedAt', 'email.opened', 'email.clicked', 'email.bounced']

/** A field's name in words: "plan", "Trigger event: amount", "Opened an email". */
export function fieldWords(field: string, fields: ConditionField[] = []): string {
  const known = fields.find((f) => f.field === field)
  if (field.startsWith('context.event.data.')) return t('wfc.triggerValue', { name: field.slice('context.event.data.'.length) })
  if (field === 'context.event.name') return t('wfc.triggerName')
  if (field.startsWith('context.')) return t('wfc.testValue', { name: field.slice('context.'.length) })
  // The standard fields in the viewer's language (the API names them in English).
  if (STANDARD.includes(field)) return t(`wfc.field.${field}` as MessageKey)
  if (known && !field.startsWith('event.')) return known.label
  if (field.startsWith('data.')) return field.slice(5)
  if (field.startsWith('event.')) return `“${field.slice(6)}”`
  return field
}

/** A CONDITION's config in one line of words, for its node: "plan is “pro”", "“purchase” happened within the last 7 days". */
export function conditionText(c: Record<string, unknown>, fields: ConditionField[] = []): string {
  const field = String(c.field ?? '')
  const op = String(c.operator ?? '')
  if (!field || !op) return t('wfc.notSetUp')
  const words = `${fieldWords(field, fields)} ${operatorWords(field, op, fields)}`
  if (NO_VALUE.has(op) || c.value === undefined) return words
  const v = c.value
  const value = typeof v === 'boolean' ? (v ? t('wfg.branch.yes') : t('wfg.branch.no')) : typeof v === 'number' ? formatNumber(v) : t('wfc.quoted', { value: String(v) })
  if (WINDOWED.has(op) && typeof v === 'number') return `${words} ${amountOf(v, String(c.unit ?? 'days'))}`
  if (op === 'triggeredMoreThan' && typeof v === 'number') return `${words} ${t('wfc.times', { count: v })}`
  return `${words} ${value}`
}

export function ConditionFields({ v, set, errorOf, fields }: {
  v: Values; set: (k: string, value: string) => void; errorOf: (field: string) => string | undefined; fields: ConditionField[]
}) {
  const id = useId()
  const field = v.field
  const pick = field.startsWith('context.event.data.') ? EVENT_DATA : field.startsWith('context.') && field !== 'context.event.name' ? CONTEXT : field
  const key = pick === EVENT_DATA ? field.slice('context.event.data.'.length) : pick === CONTEXT ? field.slice('context.'.length) : ''
  const contact = fields.filter((f) => !f.field.startsWith('context.'))
  const groups: Array<[string, ConditionField[]]> = [
    [t('wfc.g.contact'), contact.filter((f) => ['email', 'subscribed', 'date'].includes(f.kind))],
    [t('wfc.g.fields'), contact.filter((f) => f.kind === 'data')],
    [t('wfc.g.activity'), contact.filter((f) => f.kind === 'emailActivity')],
    [t('wfc.g.events'), contact.filter((f) => f.kind === 'event')],
    [t('wfc.g.segments'), contact.filter((f) => f.kind === 'segment')],
  ]
  const listed = new Set(contact.map((f) => f.field))
  const ops = field ? operatorsOf(field, fields) : []
  const vtype = valueTypeOf(field, v.operator, fields)
  const choose = (next: string) => {
    const nf = next === EVENT_DATA ? 'context.event.data.' : next === CONTEXT ? 'context.' : next
    set('field', nf)
    const nops = operatorsOf(nf, fields)
    const op = nops.includes(v.operator) ? v.operator : nops[0] ?? ''
    set('operator', op)
    set('value', '')
    set('vtype', valueTypeOf(nf, op, fields))
  }
  const setOp = (op: string) => {
    set('operator', op)
    const next = valueTypeOf(field, op, fields)
    if (next !== vtype) set('value', '')
    set('vtype', next)
  }
  const fieldError = errorOf('config.field')
  return <>
    <FormField label={t('wfc.check')} id={`${id}-field`} error={fieldError}>
      {(c) => (
      <select {...c} value={pick} onChange={(e) => choose(e.target.value)}>
        <option value="">{t('wfc.choose')}</option>
        {groups.filter(([, fs]) => fs.length > 0).map(([title, fs]) => (
          <optgroup key={title} label={title}>{fs.map((f) => <option key={f.field} value={f.field}>{f.kind === 'event' ? t('wfc.event', { name: f.label }) : fieldWords(f.field, fields)}</option>)}</optgroup>
        ))}
        {field && !listed.has(field) && pick !== EVENT_DATA && pick !== CONTEXT && field !== 'context.event.name' && <option value={field}>{fieldWords(field, fields)}</option>}
        <optgroup label={t('wfc.thisRun')}>
          <option value="context.event.name">{t('wfc.triggerEventName')}</option>
          <option value={EVENT_DATA}>{t('wfc.triggerEventValue')}</option>
          <option value={CONTEXT}>{t('wfc.testRunValue')}</option>
        </optgroup>
      </select>
      )}
    </FormField>
    {(pick === EVENT_DATA || pick === CONTEXT) && (
      <FormField label={pick === EVENT_DATA ? t('wfc.eventValueName') : t('wfc.valueName')} id={`${id}-key`} hint={pick === EVENT_DATA ? t('wfc.eventValueHint') : t('wfc.valueHint')}>
        {(c) => (
          <input {...c} value={key} placeholder={pick === EVENT_DATA ? t('wfc.amountPlaceholder') : t('wfc.planPlaceholder')}
            onChange={(e) => set('field', `${pick === EVENT_DATA ? 'context.event.data.' : 'context.'}${e.target.value.trim()}`)} />
        )}
      </FormField>
    )}
    {ops.length > 0 && (
      <FormField label={t('wfg.type.CONDITION')} id={`${id}-op`} error={errorOf('config.operator')}>
        {(c) => (
          <select {...c} value={v.operator} onChange={(e) => setOp(e.target.value)}>
            {!ops.includes(v.operator) && <option value={v.operator}>{t('wfc.chooseOp')}</option>}
            {ops.map((o) => <option key={o} value={o}>{operatorWords(field, o, fields)}</option>)}
          </select>
        )}
      </FormField>
    )}
    {field && v.operator && !NO_VALUE.has(v.operator) && (
      <ValueInput vtype={vtype} op={v.operator} v={v} set={set} error={errorOf('config.value')} />
    )}
    {WINDOWED.has(v.operator) && (
      <FormField label={t('wff.unit')} id={`${id}-unit`} error={errorOf('config.unit')}>
        {(c) => (
          <select {...c} value={v.unit || 'days'} onChange={(e) => set('unit', e.target.value)}>
            <option value="minutes">{t('b.unit.minutes')}</option><option value="hours">{t('b.unit.hours')}</option><option value="days">{t('b.unit.days')}</option>
          </select>
        )}
      </FormField>
    )}
    {field && v.operator && <p className="small wf-reads" data-testid="condition-reads">{t('wfc.reads')} <strong>{conditionText(conditionPreview(v, vtype), fields)}</strong></p>}
    <p className="small muted">{t('wfc.yesNo')}</p>
  </>
}

/** The config as the form stands, for the "Reads:" line. */
function conditionPreview(v: Values, vtype: ValueType): Record<string, unknown> {
  const out: Record<string, unknown> = { field: v.field, operator: v.operator }
  if (!NO_VALUE.has(v.operator)) {
    out.value = vtype === 'boolean' ? (v.value || 'true') === 'true' : vtype === 'number' && v.value.trim() !== '' && !Number.isNaN(Number(v.value)) ? Number(v.value) : v.value
  }
  if (WINDOWED.has(v.operator)) out.unit = v.unit || 'days'
  return out
}

function ValueInput({ vtype, op, v, set, error }: { vtype: ValueType; op: string; v: Values; set: (k: string, value: string) => void; error?: string }) {
  const label = WINDOWED.has(op) ? t('wfc.howLong') : op === 'triggeredMoreThan' ? t('wfc.numberOfTimes') : t('wfc.value')
  return (
    <FormField label={label} error={error}>
      {(c) => vtype === 'boolean'
        ? (
          <select {...c} value={v.value || 'true'} onChange={(e) => { set('value', e.target.value); set('vtype', 'boolean') }}>
            <option value="true">{t('contact.yes')}</option><option value="false">{t('contact.no')}</option>
          </select>
        )
        : <input {...c} type={vtype === 'number' ? 'number' : vtype === 'date' ? 'date' : 'text'} value={v.value}
            onChange={(e) => { set('value', e.target.value); set('vtype', vtype) }} />}
    </FormField>
  )
}
