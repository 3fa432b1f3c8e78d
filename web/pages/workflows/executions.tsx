import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { Background, Controls, type Edge, MarkerType, ReactFlow, ReactFlowProvider } from '@xyflow/react'
import '@xyflow/react/dist/style.css'
import { type FormEvent, useEffect, useId, useMemo, useRef, useState } from 'react'
import { Link } from 'wouter'
import { type Contact, type ContactPage, del, get, post, type Project } from '../../api'
import { Badge, ConfirmButton, Empty, ErrorBox, Field, fieldError, formatDate, FormField, Loading, PageHead } from '../../components/ui'
import { edgeTypes } from './edges'
import { workflowQuery } from './editor'
import type { ConditionField } from './forms'
import { StepOutput } from './outputs'
import { branchLabel, EXECUTION_STATUSES, statusWords, type Execution, type ExecutionList, nodeTypes, type StepNode, summary, typeLabel, useStepNodes, type Workflow } from './graph'
import { type MessageKey, t } from '../../i18n'

const TONE: Record<string, string> = { COMPLETED: 'ok', EXITED: 'ok', RUNNING: 'pending', WAITING: 'pending', FAILED: 'failed', CANCELLED: 'cancelled' }

/** An execution's or a step run's status in words ("not reached" without one). */
function statusText(status: string | undefined): string {
  if (!status) return t('wfx.notReached')
  return statusWords(status)
}

/** What an execution waits for, in words. */
function waitingText(w: NonNullable<Execution['waitingFor']>): string {
  if (w.eventName && w.until) return t('wfx.waitingForUntil', { event: w.eventName, until: formatDate(w.until) })
  if (w.eventName) return t('wfx.waitingFor', { event: w.eventName })
  if (w.until) return t('wfx.waitingUntil', { until: formatDate(w.until) })
  return t('wfx.waiting')
}

/** A workflow's executions by status, one execution's path through the graph with each step's output, and a test run. */
export function WorkflowExecutions({ project, id }: { project: Project; id: string }) {
  const wf = useQuery(workflowQuery(project.id, id))
  const qc = useQueryClient()
  const [status, setStatus] = useState('')
  const [open, setOpen] = useState<string | null>(null)
  const list = useInfiniteQuery({
    queryKey: ['executions', project.id, id, status],
    initialPageParam: '',
    queryFn: ({ pageParam }) => get<ExecutionList>(`/workflows/${id}/executions?limit=25${status ? `&status=${status}` : ''}${pageParam ? `&cursor=${encodeURIComponent(pageParam)}` : ''}`, project.id),
    getNextPageParam: (last) => (last.hasMore ? last.cursor : undefined),
  })
  const invalidate = () => Promise.all([
    qc.invalidateQueries({ queryKey: ['executions', project.id, id] }),
    qc.invalidateQueries({ queryKey: ['execution', project.id, id] }),
  ])
  const cancelAll = useMutation({ mutationFn: () => post<{ cancelled: number }>(`/workflows/${id}/executions/cancel-all`, {}, project.id), onSuccess: invalidate })
  const rows = list.data?.pages.flatMap((p) => p.data) ?? []
  const total = list.data?.pages[0]?.total
  if (wf.isPending) return <Loading />
  if (wf.error) return <><ErrorBox error={wf.error} /><Link href="/workflows">{t('wfe.all')}</Link></>
  return (
    <div>
      <PageHead title={t('wfx.title', { name: wf.data.name })}>
        <Link className="button secondary" href={`/workflows/${id}`}>{t('wfx.editGraph')}</Link>
        <ConfirmButton label={t('wfx.cancelAll')} confirm={t('wfx.cancelAllConfirm')} onConfirm={() => cancelAll.mutate()} busy={cancelAll.isPending} />
      </PageHead>
      <p className="small muted"><Link href="/workflows">← {t('wfe.all')}</Link> · {wf.data.enabled ? t('wfx.enabled') : t('wfx.disabled')} · {t('wfx.startsOn', { event: wf.data.triggerConfig.eventName })}</p>
      <ErrorBox error={cancelAll.error} />
      {cancelAll.data && <div className="alert ok" role="status">{t('wfx.cancelled', { count: cancelAll.data.cancelled })}</div>}
      <TestRun project={project} wf={wf.data} onStarted={(e) => { invalidate(); setOpen(e.id) }} />
      <div className="card">
        <div className="row wf-filter">
          <FormField label={t('wf.status')} id="ex-status">
            {(c) => (
              <select {...c} value={status} onChange={(e) => setStatus(e.target.value)}>
                <option value="">{t('ui.all')}</option>
                {EXECUTION_STATUSES.map((s) => <option key={s} value={s}>{t(`wfx.st.${s}` as MessageKey)}</option>)}
              </select>
            )}
          </FormField>
          <button type="button" className="secondary" onClick={invalidate}>{t('wfx.refresh')}</button>
        </div>
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data && rows.length === 0 && (status
          ? <Empty title={t('wfx.noneOf', { status: t(`wfx.st.${status}` as MessageKey) })}>{t('wf.otherStatus')}</Empty>
          : <Empty title={t('wfx.none')}>{wf.data.enabled ? t('wfx.noneEnabled', { event: wf.data.triggerConfig.eventName }) : t('wfx.noneDisabled')}</Empty>)}
        {rows.length > 0 && (
          <>
            <p className="small muted">{total !== undefined && t('wfx.count', { count: total })}</p>
            <div className="table-wrap"><table>
              <thead><tr><th scope="col">{t('wfc.g.contact')}</th><th scope="col">{t('wf.status')}</th><th scope="col">{t('wfx.started')}</th><th scope="col">{t('wfx.nowAt')}</th><th scope="col"><span className="sr-only">{t('wfx.actions')}</span></th></tr></thead>
              <tbody>{rows.map((e) => (
                <tr key={e.id} aria-selected={open === e.id ? true : undefined} className={open === e.id ? 'current' : undefined}>
                  <td><ContactName project={project} id={e.contactId} /></td>
                  <td><Badge status={TONE[e.status] ?? ''}>{statusText(e.status)}</Badge>{e.exitReason && <span className="small muted"> {e.exitReason}</span>}</td>
                  <td>{formatDate(e.startedAt)}</td>
                  <td>{e.currentStepId ? wf.data.steps.find((s) => s.id === e.currentStepId)?.name ?? '—' : '—'}{e.waitingFor?.eventName && <span className="small muted"> {t('wfx.waitsFor', { event: e.waitingFor.eventName })}</span>}</td>
                  <td><button type="button" className="secondary small" onClick={() => setOpen(open === e.id ? null : e.id)} aria-expanded={open === e.id}>{open === e.id ? t('wfx.hidePath') : t('wfx.showPath')}</button></td>
                </tr>
              ))}</tbody>
            </table></div>
            {list.hasNextPage && <button type="button" className="secondary" onClick={() => list.fetchNextPage()} disabled={list.isFetchingNextPage}>{t('wfx.loadMore')}</button>}
          </>
        )}
      </div>
      {open && <ExecutionView key={open} project={project} wf={wf.data} executionId={open} onChanged={invalidate} />}
    </div>
  )
}

function ContactName({ project, id }: { project: Project; id: string }) {
  const c = useQuery({ queryKey: ['contact', project.id, id], queryFn: () => get<Contact>(`/contacts/${id}`, project.id), staleTime: 300_000 })
  return <Link href={`/contacts/${id}`}>{c.data?.email ?? id}</Link>
}

/** One execution: the graph with the steps it reached and the ways it took, and every step's output or error. */
function ExecutionView({ project, wf, executionId, onChanged }: { project: Project; wf: Workflow; executionId: string; onChanged: () => void }) {
  const ex = useQuery({
    queryKey: ['execution', project.id, wf.id, executionId],
    queryFn: () => get<Execution>(`/workflows/${wf.id}/executions/${executionId}`, project.id),
    // A running execution moves on within moments; a waiting one when its event comes or its time is up.
    // (A wait that is due, after "Continue now", is picked up within moments too.)
    refetchInterval: (q) => {
      const d = q.state.data
      if (d?.status === 'RUNNING' || (d?.status === 'WAITING' && d.waitingFor?.until && new Date(d.waitingFor.until) <= new Date())) return 1000
      return d?.status === 'WAITING' ? 10_000 : false
    },
  })
  const cancel = useMutation({
    mutationFn: () => del<Execution>(`/workflows/${wf.id}/executions/${executionId}`, project.id),
    onSuccess: () => { ex.refetch(); onChanged() },
  })
  // A test run need not wait a day: the wait ends now, as it would at its time (the job worker goes on).
  const skip = useMutation({
    mutationFn: () => post<Execution>(`/workflows/${wf.id}/executions/${executionId}/continue`, {}, project.id),
    onSuccess: () => { ex.refetch(); onChanged() },
  })
  // The list above follows the execution's status as this view sees it change.
  const status = ex.data?.status
  const seen = useRef(status)
  useEffect(() => {
    if (status && seen.current && status !== seen.current) onChanged()
    seen.current = status
  }, [status, onChanged])
  if (ex.isPending) return <div className="card"><Loading /></div>
  if (ex.error) return <div className="card"><ErrorBox error={ex.error} /></div>
  const e = ex.data
  const runs = e.steps ?? []
  const waitingAt = e.currentStepId ? wf.steps.find((s) => s.id === e.currentStepId) : undefined
  const name = (stepId: string) => wf.steps.find((s) => s.id === stepId)?.name ?? t('wfx.deletedStep')
  return (
    <section className="card" aria-labelledby="ex-h">
      <div className="head">
        <h2 id="ex-h">{t('wfx.execution')} <Badge status={TONE[e.status] ?? ''}>{statusText(e.status)}</Badge></h2>
        <div className="row">
          {e.status === 'WAITING' && e.waitingFor?.until && (
            <button type="button" onClick={() => skip.mutate()} disabled={skip.isPending} aria-describedby="ex-skip-hint">{t('wfx.continueNow')}</button>
          )}
          {(e.status === 'RUNNING' || e.status === 'WAITING') && <button type="button" className="danger" onClick={() => cancel.mutate()} disabled={cancel.isPending}>{t('wfx.cancelThis')}</button>}
          <button type="button" className="secondary" onClick={() => ex.refetch()}>{t('wfx.refresh')}</button>
        </div>
      </div>
      <ErrorBox error={cancel.error ?? skip.error} />
      {e.status === 'WAITING' && (
        <p id="ex-skip-hint" className="small">
          {e.waitingFor?.until
            ? waitingAt?.type === 'DELAY'
              ? t('wfx.skipDelay')
              : t('wfx.skipWait', { event: e.waitingFor.eventName ?? '' })
            : t('wfx.noLimit', { event: e.waitingFor?.eventName ?? '' })}
        </p>
      )}
      <p className="small muted">
        <ContactName project={project} id={e.contactId} /> · {t('wfx.startedAt', { at: formatDate(e.startedAt) })}{e.finishedAt && ` · ${t('wfx.endedAt', { at: formatDate(e.finishedAt) })}`}
        {e.exitReason && ` · ${t('wfx.exitReason', { reason: e.exitReason })}`}
        {e.waitingFor && ` · ${waitingText(e.waitingFor)}`}
      </p>
      {e.error && <div className="alert error">{e.error}</div>}
      <ReactFlowProvider><PathGraph projectId={project.id} wf={wf} e={e} /></ReactFlowProvider>
      <div className="table-wrap"><table className="stacked">
        <caption className="sr-only">{t('wfx.caption')}</caption>
        <thead><tr><th scope="col">{t('wfx.step')}</th><th scope="col">{t('wf.status')}</th><th scope="col">{t('wfx.what')}</th><th scope="col">{t('wfx.started')}</th><th scope="col">{t('wfx.finished')}</th></tr></thead>
        <tbody>{runs.length === 0 && <tr><td colSpan={5} className="muted">{t('wfx.noStep')}</td></tr>}
          {runs.map((r) => (
          <tr key={r.id}>
            <td data-label={`${t('wfx.step')}: `}>{name(r.stepId)} <span className="small muted">{typeLabel(r.stepType)}</span></td>
            <td data-label={`${t('wf.status')}: `}><Badge status={r.status === 'FAILED' ? 'failed' : r.status === 'COMPLETED' ? 'ok' : 'pending'}>{statusText(r.status)}</Badge></td>
            <td data-label={`${t('wfx.what')}: `}><StepOutput run={r} /></td>
            <td data-label={`${t('wfx.started')}: `}>{formatDate(r.startedAt)}</td>
            <td data-label={`${t('wfx.finished')}: `}>{formatDate(r.finishedAt)}</td>
          </tr>
        ))}</tbody>
      </table></div>
    </section>
  )
}

/**
 * The workflow's graph, read-only, with the steps the execution reached coloured by their status and the
 * transitions it took drawn bold: a transition counts as taken when its two steps ran one after the other
 * (and, out of a branching step, when its branch is the one the output names).
 */
function PathGraph({ projectId, wf, e }: { projectId: string; wf: Workflow; e: Execution }) {
  const runs = e.steps ?? []
  const templates = useQuery({ queryKey: ['templates', projectId, 'all'], queryFn: () => get<{ data: Array<{ id: string; name: string }> }>('/templates?pageSize=100', projectId) })
  const tplNames = useMemo(() => new Map((templates.data?.data ?? []).map((tp) => [tp.id, tp.name])), [templates.data])
  const fields = useQuery({ queryKey: ['workflow-fields', projectId], queryFn: () => get<{ contact: ConditionField[]; event: ConditionField[] }>('/workflows/fields', projectId) })
  const taken = new Set<string>()
  for (let i = 0; i + 1 < runs.length; i++) {
    const from = runs[i]
    const cands = wf.transitions.filter((tr) => tr.fromStepId === from.stepId && tr.toStepId === runs[i + 1].stepId)
    const branch = from.output && typeof from.output.result === 'boolean' ? (from.output.result ? 'yes' : 'no') : from.output?.timedOut ? 'timeout' : from.stepType === 'WAIT_FOR_EVENT' ? 'event' : null
    const tr = cands.find((c) => c.branch === branch) ?? cands[0]
    if (tr) taken.add(tr.id)
  }
  // Rebuilt only when what it shows changes (statusKey: the steps' statuses), each keeping its measured
  // size (useStepNodes).
  const statusKey = runs.map((r) => `${r.stepId}=${r.status}`).join(' ')
  const built = useMemo((): StepNode[] => {
    const status = new Map(statusKey ? statusKey.split(' ').map((p) => p.split('=') as [string, string]) : [])
    return wf.steps.map((s) => ({
      id: s.id, type: 'step', position: s.position, draggable: false, connectable: false, selectable: false,
      data: { step: s, text: summary(s.type, s.config, tplNames, fields.data?.contact), status: status.get(s.id) },
      ariaLabel: `${t('wfe.stepLabel', { type: typeLabel(s.type), name: s.name })}: ${statusText(status.get(s.id))}`,
      className: status.has(s.id) ? 'visited' : 'unvisited',
    }))
  }, [wf.steps, tplNames, fields.data, statusKey])
  const [nodes, onNodesChange] = useStepNodes(built)
  const edges: Edge[] = wf.transitions.map((tr) => ({
    id: tr.id, type: 'routed', source: tr.fromStepId, target: tr.toStepId, sourceHandle: tr.branch ?? null, label: tr.branch ? branchLabel(tr.branch) : undefined,
    className: `${taken.has(tr.id) ? 'taken' : 'not-taken'}${tr.branch ? ` b-${tr.branch}` : ''}`, animated: taken.has(tr.id) && e.status === 'WAITING' && runs[runs.length - 1]?.stepId === tr.toStepId,
    markerEnd: { type: MarkerType.ArrowClosed }, focusable: false, selectable: false,
    ariaLabel: t(taken.has(tr.id) ? 'wfx.taken' : 'wfx.notTaken', { from: wf.steps.find((s) => s.id === tr.fromStepId)?.name ?? '', to: wf.steps.find((s) => s.id === tr.toStepId)?.name ?? '' }),
  }))
  return (
    <figure className="wf-canvas wf-path">
      <figcaption className="sr-only">{t('wfx.path', { steps: runs.map((r) => `${wf.steps.find((s) => s.id === r.stepId)?.name ?? typeLabel(r.stepType)} ${statusText(r.status)}`).join(t('wfx.thenSep')) })}</figcaption>
      <ReactFlow nodes={nodes} onNodesChange={onNodesChange} edges={edges} nodeTypes={nodeTypes} edgeTypes={edgeTypes} nodesDraggable={false} nodesConnectable={false} elementsSelectable={false}
        nodesFocusable={false} edgesFocusable={false} fitView fitViewOptions={{ maxZoom: 1, padding: 0.2 }} minZoom={0.2} proOptions={{ hideAttribution: false }}>
        <Background />
        <Controls showInteractive={false} aria-label={t('wfe.zoom')} />
      </ReactFlow>
    </figure>
  )
}

/** Starts an execution for a chosen contact (POST /workflows/:id/executions), enabled or not. */
function TestRun({ project, wf, onStarted }: { project: Project; wf: Workflow; onStarted: (e: Execution) => void }) {
  const [email, setEmail] = useState('')
  const [search, setSearch] = useState('')
  const listId = useId()
  const ctxId = useId()
  const [ctxText, setCtxText] = useState('')
  const [ctxError, setCtxError] = useState<string | null>(null)
  useEffect(() => { const timer = setTimeout(() => setSearch(email.trim()), 250); return () => clearTimeout(timer) }, [email])
  const found = useQuery({
    queryKey: ['contacts', project.id, 'pick', search],
    queryFn: () => get<ContactPage>(`/contacts?limit=10&search=${encodeURIComponent(search)}`, project.id),
    enabled: search.length >= 2,
  })
  const start = useMutation({
    mutationFn: (body: Record<string, unknown>) => post<Execution>(`/workflows/${wf.id}/executions`, body, project.id),
    onSuccess: onStarted,
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    setCtxError(null)
    let context: unknown
    if (ctxText.trim()) {
      try { context = JSON.parse(ctxText) } catch { setCtxError(t('wfx.notJson')); return }
    }
    start.mutate({ email: email.trim(), ...(context !== undefined ? { context } : {}) })
  }
  return (
    <form className="card" onSubmit={submit} noValidate>
      <h2>{t('wfx.testRun')}</h2>
      <p className="small muted">{t('wfx.testRunHint')}</p>
      <ErrorBox error={start.error} shown={['email', 'contactId', 'context']} />
      {start.data && <div className="alert ok" role="status">{t('wfx.testStarted')}</div>}
      <div className="row">
        <Field label={t('wfx.contactEmail')} type="email" value={email} onChange={(e) => setEmail(e.target.value)} list={listId} placeholder="ada@example.com" autoComplete="off"
          error={fieldError(start.error, 'email') ?? fieldError(start.error, 'contactId') ?? (start.error && 'status' in start.error && start.error.status === 404 ? t('wfx.noContact') : undefined)} />
        <datalist id={listId}>{(found.data?.data ?? []).map((c) => <option key={c.id} value={c.email} />)}</datalist>
        <FormField label={t('wfx.context')} id={ctxId} error={ctxError ?? fieldError(start.error, 'context')}>
          {(c) => <input {...c} className="mono" value={ctxText} onChange={(e) => setCtxText(e.target.value)} placeholder='{"plan": "pro"}' />}
        </FormField>
        <button type="submit" disabled={start.isPending}>{t('wfx.start')}</button>
      </div>
    </form>
  )
}
