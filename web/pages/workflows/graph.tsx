import { applyNodeChanges, Handle, type Node, type NodeChange, type NodeProps, Position } from '@xyflow/react'
import { useCallback, useEffect, useState } from 'react'
import { type Answer, ApiError, type FieldError, type Narrowed } from '../../api'
import { conditionText } from './condition'
import type { ConditionField } from './forms'
import { formatNumber } from '../../format'
import { type MessageKey, t } from '../../i18n'

/** The shapes of the workflows API as the dashboard reads them, from the server's document (web/api.ts). */
export type Workflow = Answer<'/workflows/{id}'>
export type Step = Workflow['steps'][number]
export type Transition = Workflow['transitions'][number]
export type WorkflowList = Answer<'/workflows'>
type ExecutionDoc = Answer<'/workflows/{id}/executions/{executionId}'>
/** An execution; the document says only that `waitingFor` and a step's output are objects. */
export type Execution = Narrowed<ExecutionDoc, {
  waitingFor: { eventName: string | null; until: string | null } | null
  steps?: StepExecution[]
}>
export type StepExecution = NonNullable<ExecutionDoc['steps']>[number]
export type ExecutionList = Narrowed<Answer<'/workflows/{id}/executions'>, { data: Execution[] }>

export const EXECUTION_STATUSES = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const
/** An execution's statuses and a step run's others. */
const STATUSES: readonly string[] = [...EXECUTION_STATUSES, 'PENDING', 'SCHEDULED', 'SKIPPED']

/** An execution's or a step run's status in words ("completed"); one the dashboard does not know, as it is in lower case. */
export function statusWords(status: string): string {
  return STATUSES.includes(status) ? t(`wfx.st.${status}` as MessageKey) : status.toLowerCase()
}

/** The step types a user adds (the TRIGGER comes with the workflow), with what each does (words from the catalogue, read when drawn). */
export const PALETTE: Array<{ type: string; label: () => string; hint: () => string }> = ['SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT']
  .map((type) => ({ type, label: () => t(`wfg.type.${type}` as MessageKey), hint: () => t(`wfg.hint.${type}` as MessageKey) }))
/** A step type in words (an unknown type as it is). */
export function typeLabel(type: string): string {
  return type === 'TRIGGER' || PALETTE.some((p) => p.type === type) ? t(`wfg.type.${type}` as MessageKey) : type
}
/** A way out of a step (yes, no, event, timeout) in words. */
export function branchLabel(branch: string): string {
  return ['yes', 'no', 'event', 'timeout'].includes(branch) ? t(`wfg.branch.${branch}` as MessageKey) : branch
}

/** The labelled ways out of a step (null: one unlabelled way out; []: none). */
export function branchesOf(type: string): string[] | null {
  if (type === 'CONDITION') return ['yes', 'no']
  if (type === 'WAIT_FOR_EVENT') return ['event', 'timeout']
  if (type === 'EXIT') return []
  return null
}

/** The faults an API error names per step (`steps.<id>`), and those it names on no step. */
export function faultsByStep(error: unknown): { byStep: Map<string, string[]>; other: FieldError[] } {
  const byStep = new Map<string, string[]>()
  const other: FieldError[] = []
  if (!(error instanceof ApiError)) return { byStep, other }
  for (const f of error.fields) {
    const m = /^steps\.([^.]+)/.exec(f.field)
    if (m) byStep.set(m[1], [...(byStep.get(m[1]) ?? []), f.message])
    else other.push(f)
  }
  return { byStep, other }
}

/** A number of minutes, hours, days or seconds (the unit singular or plural, as the API names it). */
export function amountOf(n: number, unit: string): string {
  const u = unit.replace(/s$/, '')
  return ['minute', 'hour', 'day', 'second'].includes(u) ? t(`wfg.n.${u}` as MessageKey, { count: n }) : `${formatNumber(n)} ${unit}`
}

/** A one-line summary of a step's configuration, shown on its node. */
export function summary(type: string, c: Record<string, unknown>, templates: Map<string, string>, fields: ConditionField[] = []): string {
  switch (type) {
    case 'TRIGGER': return t('wfg.onEvent', { event: String(c.eventName ?? '') })
    case 'SEND_EMAIL': {
      const r = c.recipient as { type?: string; email?: string } | undefined
      const tpl = c.templateId ? templates.get(String(c.templateId)) ?? t('wfg.template') : t('wfg.noTemplate')
      return r?.type === 'CUSTOM' ? t('wfg.to', { what: tpl, email: String(r.email ?? '') }) : tpl
    }
    case 'DELAY': return t('wfg.wait', { duration: amountOf(Number(c.amount), String(c.unit ?? 'day')) })
    case 'WAIT_FOR_EVENT': {
      const until = t('wfg.until', { event: String(c.eventName ?? '') })
      return c.timeout ? t('wfg.atMost', { what: until, duration: durationText(Number(c.timeout)) }) : until
    }
    case 'CONDITION': return conditionText(c, fields)
    case 'WEBHOOK': return `${String(c.method ?? 'POST')} ${String(c.url ?? '')}`
    case 'UPDATE_CONTACT': {
      const parts: string[] = []
      if (c.data && typeof c.data === 'object') parts.push(t('wfg.set', { fields: Object.keys(c.data).join(', ') || t('wfg.nothing') }))
      if (typeof c.subscribed === 'boolean') parts.push(c.subscribed ? t('wfg.subscribe') : t('wfg.unsubscribe'))
      return parts.join(', ')
    }
    case 'EXIT': return c.reason ? t('wfg.reason', { reason: String(c.reason) }) : t('wfg.hint.EXIT')
    default: return ''
  }
}

export const DURATION_UNITS = [['days', 86_400], ['hours', 3_600], ['minutes', 60]] as const

/** Seconds as the largest whole unit: 259200 -> "3 days". */
export function durationText(seconds: number): string {
  for (const [unit, s] of DURATION_UNITS) if (seconds % s === 0) return amountOf(seconds / s, unit)
  return amountOf(seconds, 'seconds')
}

export interface StepData extends Record<string, unknown> {
  step: Step
  text: string
  draft?: boolean
  /** The API's faults for this step (enable, or an edit of an enabled workflow). */
  faults?: string[]
  /** In the executions view: the status of the step's run, when the execution reached it. */
  status?: string
  /** In the editor: how many executions entered the step, wait there now, completed or failed it. */
  counts?: StepCounts
}
export type StepCounts = Answer<'/workflows/{id}/stats'>['data'][number]

/** A step's counts in words, for its node and its label. */
export function countsText(c: StepCounts): string {
  const n = (x: number) => formatNumber(x)
  return t('wfg.counts', { entered: n(c.entered), waiting: n(c.waiting), completed: n(c.completed), failed: n(c.failed) })
}
export type StepNode = Node<StepData, 'step'>

/** A step on the canvas: its type, name, configuration in a line, its labelled ways out and its faults. */
export function StepNodeView({ data }: NodeProps<StepNode>) {
  const { step, faults, status, draft } = data
  const outs = branchesOf(step.type)
  const cls = ['wf-node', `t-${step.type.toLowerCase()}`, faults?.length ? 'fault' : '', status ? `run-${status.toLowerCase()}` : '', draft ? 'draft' : ''].filter(Boolean).join(' ')
  return (
    <div className={cls}>
      {step.type !== 'TRIGGER' && <Handle type="target" position={Position.Top} />}
      <div className="wf-type">{typeLabel(step.type)}{draft && t('wfg.notSaved')}{status && <span className="wf-status"> · {statusWords(status)}</span>}</div>
      <div className="wf-name">{step.name}</div>
      {data.text && <div className="wf-text">{data.text}</div>}
      {data.counts && (
        <div className="wf-counts" aria-hidden="true">
          <span title={t('wfg.entered')}>{t('wfg.inN', { n: formatNumber(data.counts.entered) })}</span>
          {data.counts.waiting > 0 && <span className="waiting" title={t('wfg.waiting')}>{t('wfg.waitingN', { n: formatNumber(data.counts.waiting) })}</span>}
          <span className="done" title={t('wfg.completed')}>{t('wfg.doneN', { n: formatNumber(data.counts.completed) })}</span>
          {data.counts.failed > 0 && <span className="failed" title={t('wfg.failed')}>{t('wfg.failedN', { n: formatNumber(data.counts.failed) })}</span>}
        </div>
      )}
      {faults?.length ? <div className="wf-fault" role="note">⚠ {faults.length === 1 ? faults[0].replace(/^step "[^"]*" \([A-Z_]+\): /, '') : t('wfg.problems', { count: faults.length })}</div> : null}
      {outs === null && <Handle type="source" position={Position.Bottom} />}
      {outs && outs.length > 0 && (
        <div className="wf-branches">
          {outs.map((b, i) => (
            <span key={b} className={`wf-branch b-${b}`} style={{ left: `${((i + 1) * 100) / (outs.length + 1)}%` }}>
              {branchLabel(b)}
              <Handle type="source" id={b} position={Position.Bottom} style={{ left: '50%' }} />
            </span>
          ))}
        </div>
      )}
    </div>
  )
}

export const nodeTypes = { step: StepNodeView }

/**
 * The nodes to hand React Flow, rebuilt from `next` whenever it changes, each keeping the size React Flow
 * measured for it before (`measured`), and React Flow's own changes (moves, selection, sizes) applied to
 * them; removals are left to the caller. A node handed over without `measured` is hidden until React Flow
 * measures it again, and when a rebuild and a measurement crossed, it never did: the node stayed hidden for
 * good (seen as steps that vanished from the editor after a save). `next` must keep its identity between
 * renders while nothing changes (useMemo).
 */
export function useStepNodes(next: StepNode[]): [StepNode[], (changes: NodeChange<StepNode>[]) => void] {
  const [nodes, setNodes] = useState<StepNode[]>(next)
  useEffect(() => setNodes((prev) => {
    const sizes = new Map(prev.map((n) => [n.id, n.measured]))
    return next.map((n) => {
      const measured = sizes.get(n.id)
      return measured ? { ...n, measured } : n
    })
  }), [next])
  const onNodesChange = useCallback((changes: NodeChange<StepNode>[]) => {
    setNodes((ns) => applyNodeChanges(changes.filter((c) => c.type !== 'remove'), ns))
  }, [])
  return [nodes, onNodesChange]
}
