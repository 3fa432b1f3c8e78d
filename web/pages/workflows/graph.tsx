import { Handle, type Node, type NodeProps, Position } from '@xyflow/react'
import { ApiError, type FieldError } from '../../api'
import { conditionText } from './condition'
import type { ConditionField } from './forms'
import { formatNumber } from '../../format'

/** The shapes of the workflows API (src/modules/workflows/model.ts) as the dashboard reads them. */
export interface Step { id: string; type: string; name: string; config: Record<string, unknown>; position: { x: number; y: number } }
export interface Transition { id: string; fromStepId: string; toStepId: string; branch: string | null }
export interface WorkflowSummary {
  id: string; name: string; description: string | null; triggerType: 'EVENT'; triggerConfig: { eventName: string }
  enabled: boolean; allowReentry: boolean; createdAt: string; updatedAt: string
}
export interface Workflow extends WorkflowSummary { steps: Step[]; transitions: Transition[] }
export interface WorkflowList { data: WorkflowSummary[]; page: number; pageSize: number; total: number; totalPages: number }
export interface StepExecution {
  id: string; stepId: string; stepType: string; status: string; output: Record<string, unknown> | null; error: string | null
  dueAt: string | null; startedAt: string; finishedAt: string | null
}
export interface Execution {
  id: string; workflowId: string; contactId: string; status: string; currentStepId: string | null
  context: Record<string, unknown>; waitingFor: { eventName: string | null; until: string | null } | null
  error: string | null; exitReason: string | null; startedAt: string; updatedAt: string; finishedAt: string | null
  steps?: StepExecution[]
}
export interface ExecutionList { data: Execution[]; cursor: string; hasMore: boolean; total: number }

export const EXECUTION_STATUSES = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const

/** The step types a user adds (the TRIGGER comes with the workflow), with what each does. */
export const PALETTE: Array<{ type: string; label: string; hint: string }> = [
  { type: 'SEND_EMAIL', label: 'Send email', hint: 'Sends a template to the contact or another address' },
  { type: 'DELAY', label: 'Delay', hint: 'Waits minutes, hours or days' },
  { type: 'WAIT_FOR_EVENT', label: 'Wait for event', hint: 'Waits for an event, with an optional timeout' },
  { type: 'CONDITION', label: 'Condition', hint: 'Branches yes or no on a contact or context field' },
  { type: 'WEBHOOK', label: 'Webhook', hint: 'Calls an HTTP(S) URL' },
  { type: 'UPDATE_CONTACT', label: 'Update contact', hint: 'Sets contact data or the subscription' },
  { type: 'EXIT', label: 'Exit', hint: 'Ends the execution' },
]
export const TYPE_LABEL: Record<string, string> = { TRIGGER: 'Trigger', ...Object.fromEntries(PALETTE.map((p) => [p.type, p.label])) }

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

const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`

/** A one-line summary of a step's configuration, shown on its node. */
export function summary(type: string, c: Record<string, unknown>, templates: Map<string, string>, fields: ConditionField[] = []): string {
  switch (type) {
    case 'TRIGGER': return `On event “${String(c.eventName ?? '')}”`
    case 'SEND_EMAIL': {
      const r = c.recipient as { type?: string; email?: string } | undefined
      const tpl = c.templateId ? templates.get(String(c.templateId)) ?? 'Template' : 'No template chosen yet'
      return `${tpl}${r?.type === 'CUSTOM' ? ` to ${r.email}` : ''}`
    }
    case 'DELAY': return `Wait ${plural(Number(c.amount), String(c.unit ?? 'day').replace(/s$/, ''))}`
    case 'WAIT_FOR_EVENT': return `Until “${String(c.eventName ?? '')}”${c.timeout ? `, at most ${durationText(Number(c.timeout))}` : ''}`
    case 'CONDITION': return conditionText(c, fields)
    case 'WEBHOOK': return `${String(c.method ?? 'POST')} ${String(c.url ?? '')}`
    case 'UPDATE_CONTACT': {
      const parts: string[] = []
      if (c.data && typeof c.data === 'object') parts.push(`set ${Object.keys(c.data).join(', ') || 'nothing'}`)
      if (typeof c.subscribed === 'boolean') parts.push(c.subscribed ? 'subscribe' : 'unsubscribe')
      return parts.join(', ')
    }
    case 'EXIT': return c.reason ? `Reason: ${String(c.reason)}` : 'Ends the execution'
    default: return ''
  }
}

export const DURATION_UNITS = [['days', 86_400], ['hours', 3_600], ['minutes', 60]] as const

/** Seconds as the largest whole unit: 259200 -> "3 days". */
export function durationText(seconds: number): string {
  for (const [unit, s] of DURATION_UNITS) if (seconds % s === 0) return plural(seconds / s, unit.replace(/s$/, ''))
  return plural(seconds, 'second')
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
export interface StepCounts { stepId: string; entered: number; waiting: number; completed: number; failed: number }

/** A step's counts in words, for its node and its label. */
export function countsText(c: StepCounts): string {
  const n = (x: number) => formatNumber(x)
  return `${n(c.entered)} entered · ${n(c.waiting)} waiting · ${n(c.completed)} completed · ${n(c.failed)} failed`
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
      <div className="wf-type">{TYPE_LABEL[step.type] ?? step.type}{draft && ' · not saved'}{status && <span className="wf-status"> · {status}</span>}</div>
      <div className="wf-name">{step.name}</div>
      {data.text && <div className="wf-text">{data.text}</div>}
      {data.counts && (
        <div className="wf-counts" aria-hidden="true">
          <span title="entered">{formatNumber(data.counts.entered)} in</span>
          {data.counts.waiting > 0 && <span className="waiting" title="waiting">{formatNumber(data.counts.waiting)} waiting</span>}
          <span className="done" title="completed">{formatNumber(data.counts.completed)} done</span>
          {data.counts.failed > 0 && <span className="failed" title="failed">{formatNumber(data.counts.failed)} failed</span>}
        </div>
      )}
      {faults?.length ? <div className="wf-fault" role="note">⚠ {faults.length === 1 ? faults[0].replace(/^step "[^"]*" \([A-Z_]+\): /, '') : `${faults.length} problems`}</div> : null}
      {outs === null && <Handle type="source" position={Position.Bottom} />}
      {outs && outs.length > 0 && (
        <div className="wf-branches">
          {outs.map((b, i) => (
            <span key={b} className={`wf-branch b-${b}`} style={{ left: `${((i + 1) * 100) / (outs.length + 1)}%` }}>
              {b}
              <Handle type="source" id={b} position={Position.Bottom} style={{ left: '50%' }} />
            </span>
          ))}
        </div>
      )}
    </div>
  )
}

export const nodeTypes = { step: StepNodeView }
