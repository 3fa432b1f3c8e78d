import { Field, FormField } from '../../components/ui'
import { ConditionFields } from './condition'
import { DURATION_UNITS } from './graph'
import { t } from '../../i18n'

/**
 * The side panel's form for each step type's configuration (the configs of src/modules/workflows/validate.ts).
 * The form holds strings; `toConfig` turns them into the config the API takes, or names the field that is
 * not right before anything is sent. The API's own field errors (`config.<key>`) come in through `errorOf`.
 */
export type Values = Record<string, string>

export interface ConditionField { field: string; label: string; kind: string; operators: string[] }

const json = (v: unknown) => (v === undefined ? '' : JSON.stringify(v, null, 2))

/** The form's strings for a step's config. */
export function toValues(type: string, c: Record<string, unknown>): Values {
  switch (type) {
    case 'SEND_EMAIL': {
      const r = (c.recipient ?? {}) as { type?: string; email?: string }
      return { templateId: String(c.templateId ?? ''), recipient: r.type === 'CUSTOM' ? 'CUSTOM' : 'CONTACT', email: r.email ?? '' }
    }
    case 'DELAY': return { amount: c.amount === undefined ? '1' : String(c.amount), unit: String(c.unit ?? 'days') }
    case 'WAIT_FOR_EVENT': {
      const t = typeof c.timeout === 'number' ? c.timeout : 0
      const [unit, s] = DURATION_UNITS.find(([, s]) => t > 0 && t % s === 0) ?? ['days', 86_400]
      return { eventName: String(c.eventName ?? ''), timeout: t ? String(t / s) : '', timeoutUnit: t && t % 60 !== 0 ? 'seconds' : unit }
    }
    case 'CONDITION': return {
      field: String(c.field ?? ''), operator: String(c.operator ?? ''),
      value: c.value === undefined || c.value === null ? '' : typeof c.value === 'string' ? c.value : JSON.stringify(c.value),
      unit: c.unit ? String(c.unit) : '',
      vtype: typeof c.value === 'boolean' ? 'boolean' : typeof c.value === 'number' ? 'number' : '',
    }
    case 'WEBHOOK': return { url: String(c.url ?? ''), method: String(c.method ?? 'POST'), headers: json(c.headers), body: json(c.body) }
    case 'UPDATE_CONTACT': return { data: json(c.data), subscribed: c.subscribed === true ? 'true' : c.subscribed === false ? 'false' : '' }
    case 'EXIT': return { reason: String(c.reason ?? '') }
    default: return {}
  }
}

export class FormFault extends Error {
  constructor(readonly field: string, message: string) { super(message) }
}

const NO_VALUE = ['exists', 'notExists', 'triggered', 'notTriggered', 'memberOfSegment', 'notMemberOfSegment']
const WINDOWED = ['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin']
const TEXTUAL = ['equals', 'notEquals', 'contains', 'notContains']

function parseJson(field: string, text: string, notJson: string): unknown {
  if (!text.trim()) return undefined
  try { return JSON.parse(text) } catch { throw new FormFault(field, notJson) }
}

/** The config the API takes, from the form's strings (FormFault naming the field when one cannot be read). */
export function toConfig(type: string, v: Values): Record<string, unknown> {
  switch (type) {
    case 'SEND_EMAIL':
      return { templateId: v.templateId, recipient: v.recipient === 'CUSTOM' ? { type: 'CUSTOM', email: v.email.trim() } : { type: 'CONTACT' } }
    case 'DELAY': return { amount: Number(v.amount), unit: v.unit }
    case 'WAIT_FOR_EVENT': {
      const out: Record<string, unknown> = { eventName: v.eventName }
      if (v.timeout.trim()) {
        const n = Number(v.timeout)
        if (!Number.isInteger(n) || n < 1) throw new FormFault('config.timeout', t('wff.timeoutWhole'))
        out.timeout = n * (DURATION_UNITS.find(([u]) => u === v.timeoutUnit)?.[1] ?? 1)
      }
      return out
    }
    case 'CONDITION': {
      const out: Record<string, unknown> = { field: v.field.trim(), operator: v.operator }
      if (!v.field.trim() || /^context\.(event\.data\.)?$/.test(v.field.trim())) throw new FormFault('config.field', t('wff.chooseField'))
      if (!NO_VALUE.includes(v.operator)) {
        const raw = v.value.trim()
        if (v.field === 'subscribed' || v.vtype === 'boolean') out.value = (raw || 'true') === 'true'
        else if (v.vtype === 'number' || WINDOWED.includes(v.operator) || v.operator === 'triggeredMoreThan') {
          if (!/^-?\d+(\.\d+)?$/.test(raw)) throw new FormFault('config.value', t('wff.enterNumber'))
          out.value = Number(raw)
        } else if (!TEXTUAL.includes(v.operator) && /^-?\d+(\.\d+)?$/.test(raw)) out.value = Number(raw)
        else out.value = v.value
      }
      if (WINDOWED.includes(v.operator)) out.unit = v.unit || 'days'
      return out
    }
    case 'WEBHOOK': {
      const out: Record<string, unknown> = { url: v.url.trim(), method: v.method }
      const headers = parseJson('config.headers', v.headers, t('wff.headersJson'))
      if (headers !== undefined) out.headers = headers
      const body = parseJson('config.body', v.body, t('wff.bodyJson'))
      if (body !== undefined) out.body = body
      return out
    }
    case 'UPDATE_CONTACT': {
      const out: Record<string, unknown> = {}
      const data = parseJson('config.data', v.data, t('wff.dataJson'))
      if (data !== undefined) out.data = data
      if (v.subscribed) out.subscribed = v.subscribed === 'true'
      return out
    }
    case 'EXIT': return v.reason.trim() ? { reason: v.reason.trim() } : {}
    default: return {}
  }
}

function Select({ label, value, onChange, options, error, hint }: {
  label: string; value: string; onChange: (v: string) => void; options: Array<[string, string]>; error?: string; hint?: string
}) {
  return (
    <FormField label={label} hint={hint} error={error}>
      {(c) => (
        <select {...c} value={value} onChange={(e) => onChange(e.target.value)}>
          {options.map(([v, l]) => <option key={v} value={v}>{l}</option>)}
        </select>
      )}
    </FormField>
  )
}

function TextArea({ label, value, onChange, error, hint, rows = 4 }: { label: string; value: string; onChange: (v: string) => void; error?: string; hint?: string; rows?: number }) {
  return (
    <FormField label={label} hint={hint} error={error}>
      {(c) => <textarea {...c} className="mono" rows={rows} value={value} onChange={(e) => onChange(e.target.value)} />}
    </FormField>
  )
}

/** The fields of one step type. `errorOf('config.templateId')`: the message the API or the form gave that field. */
export function StepFields({ type, v, set, errorOf, templates, fields }: {
  type: string; v: Values; set: (k: string, value: string) => void; errorOf: (field: string) => string | undefined
  templates: Array<{ id: string; name: string; type: string }>; fields: ConditionField[]
}) {
  switch (type) {
    case 'SEND_EMAIL':
      return <>
        <Select label={t('wfg.template')} value={v.templateId} onChange={(x) => set('templateId', x)} error={errorOf('config.templateId')}
          hint={templates.length ? t('wff.marketingHint') : t('wff.noTemplates')}
          options={[['', t('wff.chooseTemplate')], ...templates.map((tp): [string, string] => [tp.id, `${tp.name} (${tp.type.toLowerCase()})`])]} />
        <Select label={t('wff.recipient')} value={v.recipient} onChange={(x) => set('recipient', x)} error={errorOf('config.recipient')}
          options={[['CONTACT', t('wff.theContact')], ['CUSTOM', t('wff.otherAddress')]]} />
        {v.recipient === 'CUSTOM' && <Field label={t('wff.recipientEmail')} type="email" value={v.email} onChange={(e) => set('email', e.target.value)} error={errorOf('config.recipient.email')} />}
      </>
    case 'DELAY':
      return <div className="row">
        <Field label={t('wff.waitFor')} type="number" min={1} value={v.amount} onChange={(e) => set('amount', e.target.value)} error={errorOf('config.amount')} />
        <Select label={t('wff.unit')} value={v.unit} onChange={(x) => set('unit', x)} error={errorOf('config.unit')} options={[['minutes', t('b.unit.minutes')], ['hours', t('b.unit.hours')], ['days', t('b.unit.days')]]} />
      </div>
    case 'WAIT_FOR_EVENT':
      return <>
        <Field label={t('wff.eventName')} value={v.eventName} onChange={(e) => set('eventName', e.target.value)} placeholder={t('whe.placeholder')} hint={t('wff.eventHint')} error={errorOf('config.eventName')} />
        <div className="row">
          <Field label={t('wff.timeout')} type="number" min={1} value={v.timeout} onChange={(e) => set('timeout', e.target.value)} hint={t('wff.timeoutHint')} error={errorOf('config.timeout')} />
          <Select label={t('wff.timeoutUnit')} value={v.timeoutUnit} onChange={(x) => set('timeoutUnit', x)} options={[['minutes', t('b.unit.minutes')], ['hours', t('b.unit.hours')], ['days', t('b.unit.days')], ['seconds', t('wff.seconds')]]} />
        </div>
      </>
    case 'CONDITION':
      return <ConditionFields v={v} set={set} errorOf={errorOf} fields={fields} />
    case 'WEBHOOK':
      return <>
        <Field label="URL" type="url" value={v.url} onChange={(e) => set('url', e.target.value)} placeholder="https://example.com/hook" error={errorOf('config.url')} />
        <Select label={t('wff.method')} value={v.method} onChange={(x) => set('method', x)} error={errorOf('config.method')} options={['POST', 'GET', 'PUT', 'PATCH', 'DELETE'].map((m): [string, string] => [m, m])} />
        <TextArea label={t('wff.headers')} value={v.headers} onChange={(x) => set('headers', x)} error={errorOf('config.headers')} rows={3} hint='{"Authorization": "Bearer …"}' />
        <TextArea label={t('wff.body')} value={v.body} onChange={(x) => set('body', x)} error={errorOf('config.body')} hint={t('wff.bodyHint')} />
      </>
    case 'UPDATE_CONTACT':
      return <>
        <TextArea label={t('wff.data')} value={v.data} onChange={(x) => set('data', x)} error={errorOf('config.data') ?? errorOf('config')} hint={t('wff.dataHint')} />
        <Select label={t('wff.subscription')} value={v.subscribed} onChange={(x) => set('subscribed', x)} error={errorOf('config.subscribed')}
          options={[['', t('wff.leave')], ['true', t('wff.subscribe')], ['false', t('wff.unsubscribe')]]} />
      </>
    case 'EXIT':
      return <Field label={t('wff.reason')} value={v.reason} onChange={(e) => set('reason', e.target.value)} placeholder={t('wff.reasonPlaceholder')} hint={t('wff.reasonHint')} error={errorOf('config.reason')} />
    default:
      return null
  }
}
