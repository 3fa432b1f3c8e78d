import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  Background, type OnSelectionChangeParams, type Connection, Controls, type Edge, MarkerType, ReactFlow,
  ReactFlowProvider, useReactFlow,
} from '@xyflow/react'
import '@xyflow/react/dist/style.css'
import { type DragEvent, type FormEvent, useCallback, useMemo, useRef, useState } from 'react'
import { Link } from 'wouter'
import { del, get, patch, post, type Project } from '../../api'
import { Badge, ConfirmButton, ErrorBox, Field, fieldError, FormField, Loading, PageHead } from '../../components/ui'
import { edgeTypes } from './edges'
import { type ConditionField, FormFault, StepFields, toConfig, toValues, type Values } from './forms'
import {
  branchesOf, branchLabel, countsText, faultsByStep, nodeTypes, PALETTE, type Step, type StepCounts, type StepNode, summary, type Transition, typeLabel, useStepNodes, type Workflow,
} from './graph'
import { t } from '../../i18n'

const DRAG_TYPE = 'application/x-mailctl-step'

interface TemplateRow { id: string; name: string; type: string }

export function workflowQuery(projectId: string, id: string) {
  return { queryKey: ['workflow', projectId, id] as const, queryFn: () => get<Workflow>(`/workflows/${id}`, projectId) }
}

/** The graph editor of one workflow (React Flow): palette, canvas, and the side panel of what is selected. */
export function WorkflowEditor({ project, id }: { project: Project; id: string }) {
  const wf = useQuery(workflowQuery(project.id, id))
  if (wf.isPending) return <Loading />
  if (wf.error) return <><ErrorBox error={wf.error} /><Link href="/workflows">{t('wfe.all')}</Link></>
  return <ReactFlowProvider><Editor project={project} wf={wf.data} /></ReactFlowProvider>
}

function Editor({ project, wf }: { project: Project; wf: Workflow }) {
  const qc = useQueryClient()
  const flow = useReactFlow()
  const [drafts, setDrafts] = useState<Step[]>([])
  const [selId, setSelId] = useState<string | null>(null)
  // The last error of the API that named steps (enable, or an edit of an enabled workflow).
  const [faultError, setFaultError] = useState<unknown>(null)
  const [actionError, setActionError] = useState<unknown>(null)
  const draftSeq = useRef(0)
  const [fitAtStart] = useState(wf.steps.length > 1)
  const templates = useQuery({ queryKey: ['templates', project.id, 'all'], queryFn: () => get<{ data: TemplateRow[] }>('/templates?pageSize=100', project.id) })
  const fields = useQuery({ queryKey: ['workflow-fields', project.id], queryFn: () => get<{ contact: ConditionField[]; event: ConditionField[] }>('/workflows/fields', project.id) })
  // Per-step counts on the graph, kept fresh while the page is open.
  const stats = useQuery({ queryKey: ['workflow-stats', project.id, wf.id], queryFn: () => get<{ data: StepCounts[] }>(`/workflows/${wf.id}/stats`, project.id), refetchInterval: 15_000 })
  const allFields = useMemo(() => [...(fields.data?.contact ?? []), ...(fields.data?.event ?? [])], [fields.data])
  const countsOf = useMemo(() => new Map((stats.data?.data ?? []).map((c) => [c.stepId, c])), [stats.data])
  const tplNames = useMemo(() => new Map((templates.data?.data ?? []).map((tp) => [tp.id, tp.name])), [templates.data])
  const faults = useMemo(() => faultsByStep(faultError), [faultError])
  const steps = useMemo(() => [...wf.steps, ...drafts], [wf.steps, drafts])
  const byId = useMemo(() => new Map(steps.map((s) => [s.id, s])), [steps])

  const refresh = useCallback(() => qc.invalidateQueries({ queryKey: ['workflow', project.id, wf.id] }), [qc, project.id, wf.id])
  const fail = useCallback((err: unknown) => {
    setActionError(err)
    if (faultsByStep(err).byStep.size) setFaultError(err)
  }, [])

  const built = useMemo((): StepNode[] => steps.map((s) => {
    const draft = s.id.startsWith('draft-')
    const f = faults.byStep.get(s.id)
    const counts = countsOf.get(s.id)
    return {
      id: s.id, type: 'step', position: s.position, selected: s.id === selId, deletable: s.type !== 'TRIGGER',
      data: { step: s, draft, faults: f, counts, text: draft ? t('wfe.setUpInPanel') : summary(s.type, s.config, tplNames, allFields) },
      ariaLabel: `${t('wfe.stepLabel', { type: typeLabel(s.type), name: s.name })}${draft ? t('wfe.notSaved') : ''}${f ? `, ${t('wfg.problems', { count: f.length })}` : ''}${counts ? `: ${countsText(counts)}` : ''}`,
      className: `step-${s.type.toLowerCase()}`,
    }
  }), [steps, faults, selId, tplNames, countsOf, allFields])
  // Removals go through onNodesDelete (the API first); the rest (moves, selection, sizes) is local.
  const [nodes, onNodesChange] = useStepNodes(built)

  const edges = useMemo((): Edge[] => wf.transitions.map((tr) => ({
    id: tr.id, type: 'routed', source: tr.fromStepId, target: tr.toStepId, sourceHandle: tr.branch ?? null, label: tr.branch ? branchLabel(tr.branch) : undefined,
    className: tr.branch ? `b-${tr.branch}` : undefined, selected: tr.id === selId, markerEnd: { type: MarkerType.ArrowClosed },
    ariaLabel: tr.branch
      ? t('wfe.fromToOn', { from: byId.get(tr.fromStepId)?.name ?? '', to: byId.get(tr.toStepId)?.name ?? '', branch: branchLabel(tr.branch) })
      : t('wfe.fromTo', { from: byId.get(tr.fromStepId)?.name ?? '', to: byId.get(tr.toStepId)?.name ?? '' }),
  })), [wf.transitions, selId, byId])

  // React Flow calls it on every change of its selection; it must keep its identity (its docs).
  const onSelectionChange = useCallback(({ nodes: ns, edges: es }: OnSelectionChangeParams) => {
    if (ns.length + es.length <= 1) setSelId(ns[0]?.id ?? es[0]?.id ?? null)
  }, [])

  const addDraft = (type: string, position: { x: number; y: number }) => {
    const label = typeLabel(type)
    const step: Step = { id: `draft-${++draftSeq.current}`, type, name: label, config: {}, position }
    setDrafts((d) => [...d, step])
    setSelId(step.id)
  }
  const onDrop = (e: DragEvent) => {
    const type = e.dataTransfer.getData(DRAG_TYPE)
    if (!type) return
    e.preventDefault()
    const p = flow.screenToFlowPosition({ x: e.clientX, y: e.clientY })
    addDraft(type, { x: Math.round(p.x - 90), y: Math.round(p.y - 30) })
  }
  /** The palette's buttons add below the lowest step (keyboard and click). */
  const addBelow = (type: string) => {
    const last = steps.reduce((a, s) => (s.position.y > a.position.y ? s : a), steps[0])
    addDraft(type, { x: last ? last.position.x : 0, y: (last ? last.position.y : 0) + 150 })
  }

  const savePosition = (id: string, position: { x: number; y: number }) => {
    const at = { x: Math.round(position.x), y: Math.round(position.y) }
    if (id.startsWith('draft-')) { setDrafts((d) => d.map((s) => (s.id === id ? { ...s, position: at } : s))); return }
    patch<Step>(`/workflows/${wf.id}/steps/${id}`, { position: at }, project.id)
      .then((s) => qc.setQueryData<Workflow>(['workflow', project.id, wf.id], (w) => w && { ...w, steps: w.steps.map((x) => (x.id === s.id ? s : x)) }))
      .catch((err) => { fail(err); refresh() })
  }

  const connect = async (c: Connection) => {
    setActionError(null)
    if (c.source.startsWith('draft-') || c.target.startsWith('draft-')) {
      setActionError(new Error(t('wfe.saveFirst')))
      return
    }
    try {
      await post<Transition>(`/workflows/${wf.id}/transitions`, { fromStepId: c.source, toStepId: c.target, ...(c.sourceHandle ? { branch: c.sourceHandle } : {}) }, project.id)
    } catch (err) { fail(err) }
    await refresh()
  }
  const removeTransition = async (id: string) => {
    setActionError(null)
    try { await del(`/workflows/${wf.id}/transitions/${id}`, project.id) } catch (err) { fail(err) }
    await refresh()
  }
  const removeStep = async (id: string) => {
    setActionError(null)
    if (id.startsWith('draft-')) { setDrafts((d) => d.filter((s) => s.id !== id)); setSelId(null); return }
    try { await del(`/workflows/${wf.id}/steps/${id}`, project.id); setSelId(null) } catch (err) { fail(err) }
    await refresh()
  }

  const enable = useMutation({
    mutationFn: (enabled: boolean) => patch<Workflow>(`/workflows/${wf.id}`, { enabled }, project.id),
    onMutate: () => setActionError(null),
    onSuccess: (w) => { setFaultError(null); qc.setQueryData(['workflow', project.id, wf.id], w); qc.invalidateQueries({ queryKey: ['workflows', project.id] }) },
    onError: (err) => {
      setFaultError(err)
      const first = faultsByStep(err).byStep.keys().next().value
      if (first) setSelId(first)
    },
  })

  const selStep = selId ? byId.get(selId) : undefined
  const selEdge = selId ? wf.transitions.find((tr) => tr.id === selId) : undefined
  const faultCount = faults.byStep.size
  return (
    <div className="wf-page">
      <PageHead title={wf.name}>
        <Badge status={wf.enabled ? 'ok' : 'pending'}>{wf.enabled ? t('wf.enabled') : t('wf.disabled')}</Badge>
        <Link className="button secondary" href={`/workflows/${wf.id}/executions`}>{t('wfe.executionsLink')}</Link>
        <button type="button" className={wf.enabled ? 'secondary' : undefined} onClick={() => enable.mutate(!wf.enabled)} disabled={enable.isPending}>
          {wf.enabled ? t('wfe.disable') : t('wfe.enable')}
        </button>
      </PageHead>
      <p className="small muted"><Link href="/workflows">← {t('wfe.all')}</Link> · {t('wfe.startsOn', { event: wf.triggerConfig.eventName })}{wf.enabled && ` · ${t('wfe.keepValid')}`}</p>
      {enable.error && (
        <div className="alert error" role="alert">
          {faultCount
            ? t('wfe.cannotEnable', { count: faultCount })
            : enable.error.message}
          {faults.other.length > 0 && <ul>{faults.other.map((f) => <li key={f.field + f.message}>{f.message}</li>)}</ul>}
        </div>
      )}
      <ErrorBox error={actionError} />
      <div className="wf-editor">
        <section className="wf-palette" aria-labelledby="palette-h">
          <h2 id="palette-h">{t('wfe.steps')}</h2>
          <p className="small muted">{t('wfe.paletteHint')}</p>
          <ul>
            {PALETTE.map((p) => (
              <li key={p.type}>
                <button type="button" className={`wf-chip t-${p.type.toLowerCase()}`} draggable title={p.hint()}
                  onDragStart={(e) => { e.dataTransfer.setData(DRAG_TYPE, p.type); e.dataTransfer.effectAllowed = 'move' }}
                  onClick={() => addBelow(p.type)}>
                  {p.label()}
                </button>
              </li>
            ))}
          </ul>
        </section>
        <section className="wf-canvas" aria-label={t('wfe.graph')} onDrop={onDrop} onDragOver={(e) => { e.preventDefault(); e.dataTransfer.dropEffect = 'move' }}>
          <ReactFlow<StepNode, Edge>
            nodes={nodes} edges={edges} nodeTypes={nodeTypes} edgeTypes={edgeTypes} onNodesChange={onNodesChange}
            onNodeDragStop={(_, n) => savePosition(n.id, n.position)}
            onSelectionChange={onSelectionChange}
            onConnect={connect}
            isValidConnection={(c) => c.source !== c.target && byId.get(c.target)?.type !== 'TRIGGER'}
            onNodesDelete={(ns) => { for (const n of ns) removeStep(n.id) }}
            onEdgesDelete={(es) => { for (const e of es) removeTransition(e.id) }}
            // A new workflow (its trigger alone) starts at the top of the canvas, with room below to draw.
            fitView={fitAtStart} defaultViewport={{ x: 160, y: 40, zoom: 1 }} fitViewOptions={{ maxZoom: 1, padding: 0.2 }} minZoom={0.2}
          >
            <Background />
            <Controls aria-label={t('wfe.zoom')} />
          </ReactFlow>
        </section>
        <aside className="wf-panel" aria-label={t('wfe.selected')}>
          {selStep
            ? <StepPanel key={selStep.id} project={project} wf={wf} step={selStep} steps={wf.steps} faults={faults.byStep.get(selStep.id)} counts={countsOf.get(selStep.id)}
                templates={templates.data?.data ?? []} fields={[...(fields.data?.contact ?? []), ...(fields.data?.event ?? [])]}
                onSaved={(s, wasDraft) => {
                  // The saved step replaces its draft at once (still selected), before the refetch.
                  qc.setQueryData<Workflow>(['workflow', project.id, wf.id], (w) => w && { ...w, steps: wasDraft ? [...w.steps, s] : w.steps.map((x) => (x.id === s.id ? s : x)) })
                  if (wasDraft) { setDrafts((d) => d.filter((x) => x.id !== wasDraft)); setSelId(s.id) }
                  refresh()
                }}
                onDelete={() => removeStep(selStep.id)} onFault={(err) => { if (faultsByStep(err).byStep.size) setFaultError(err) }} />
            : selEdge !== undefined
              ? <div className="card">
                  <h2>{t('wfe.connection')}</h2>
                  <p>{selEdge.branch
                    ? t('wfe.fromToOnBranch', { from: byId.get(selEdge.fromStepId)?.name ?? '', to: byId.get(selEdge.toStepId)?.name ?? '', branch: branchLabel(selEdge.branch) })
                    : `${t('wfe.fromTo', { from: byId.get(selEdge.fromStepId)?.name ?? '', to: byId.get(selEdge.toStepId)?.name ?? '' })}.`}</p>
                  <button type="button" className="danger" onClick={() => { removeTransition(selEdge.id); setSelId(null) }}>{t('wfe.deleteConnection')}</button>
                </div>
              : <WorkflowPanel project={project} wf={wf} />}
        </aside>
      </div>
    </div>
  )
}

/** The workflow's own settings, shown while nothing is selected. */
function WorkflowPanel({ project, wf }: { project: Project; wf: Workflow }) {
  const qc = useQueryClient()
  const save = useMutation({
    mutationFn: (b: Record<string, unknown>) => patch<Workflow>(`/workflows/${wf.id}`, b, project.id),
    onSuccess: (w) => { qc.setQueryData(['workflow', project.id, wf.id], w); qc.invalidateQueries({ queryKey: ['workflows', project.id] }) },
  })
  const remove = useMutation({ mutationFn: () => del(`/workflows/${wf.id}`, project.id), onSuccess: () => { qc.invalidateQueries({ queryKey: ['workflows', project.id] }); history.back() } })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    save.mutate({ name: String(f.get('name') ?? ''), eventName: String(f.get('eventName') ?? '').trim(), description: String(f.get('description') ?? '') || null, allowReentry: f.get('allowReentry') === 'on' })
  }
  return (
    <form className="card" onSubmit={submit} noValidate>
      <h2>{t('wfe.workflow')}</h2>
      <p className="small muted">{t('wfe.workflowHint')}</p>
      <ErrorBox error={save.error ?? remove.error} shown={['name', 'eventName', 'triggerConfig', 'description']} />
      {save.isSuccess && <div className="alert ok" role="status">{t('ui.saved')}</div>}
      <Field label={t('wf.name')} name="name" defaultValue={wf.name} error={fieldError(save.error, 'name')} />
      <Field label={t('wf.trigger')} name="eventName" defaultValue={wf.triggerConfig.eventName} hint={t('wfe.triggerHint')} error={fieldError(save.error, 'eventName') ?? fieldError(save.error, 'triggerConfig')} />
      <Field label={t('wfe.description')} name="description" defaultValue={wf.description ?? ''} error={fieldError(save.error, 'description')} />
      <div className="check"><input id="wf-reentry" name="allowReentry" type="checkbox" defaultChecked={wf.allowReentry} /><label htmlFor="wf-reentry">{t('wfe.reentry')}</label></div>
      <div className="row">
        <button type="submit" disabled={save.isPending}>{t('ui.save')}</button>
        <ConfirmButton label={t('wfe.deleteWorkflow')} confirm={t('wfe.deleteIt')} onConfirm={() => remove.mutate()} busy={remove.isPending} />
      </div>
    </form>
  )
}

function StepPanel({ project, wf, step, steps, faults, counts, templates, fields, onSaved, onDelete, onFault }: {
  project: Project; wf: Workflow; step: Step; steps: Step[]; faults?: string[]; counts?: StepCounts; templates: TemplateRow[]; fields: ConditionField[]
  onSaved: (s: Step, wasDraft: string | null) => void; onDelete: () => void; onFault: (err: unknown) => void
}) {
  const qc = useQueryClient()
  const draft = step.id.startsWith('draft-')
  const [name, setName] = useState(step.name)
  const [values, setValues] = useState<Values>(() => toValues(step.type, step.config))
  const [local, setLocal] = useState<FormFault | null>(null)
  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) => draft
      ? post<Step>(`/workflows/${wf.id}/steps`, { type: step.type, position: step.position, ...body }, project.id)
      : step.type === 'TRIGGER'
        ? patch<Workflow>(`/workflows/${wf.id}`, { eventName: values.eventName }, project.id).then(() => patch<Step>(`/workflows/${wf.id}/steps/${step.id}`, { name }, project.id))
        : patch<Step>(`/workflows/${wf.id}/steps/${step.id}`, body, project.id),
    onSuccess: (s) => { onSaved(s, draft ? step.id : null); qc.invalidateQueries({ queryKey: ['workflow-stats', project.id, wf.id] }) },
    onError: onFault,
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    setLocal(null)
    try {
      save.mutate(step.type === 'TRIGGER' ? { name } : { name, config: toConfig(step.type, values) })
    } catch (err) {
      if (err instanceof FormFault) setLocal(err)
      else throw err
    }
  }
  const errorOf = (field: string) => (local?.field === field ? local.message : fieldError(save.error, field))
  const shown = ['name', 'config', 'eventName']
  // A DELAY's change does not move the executions already waiting at it (their due time is kept).
  const delayWaiting = step.type === 'DELAY' && !draft ? counts?.waiting ?? 0 : 0
  const delayChanged = step.type === 'DELAY' && (values.amount !== String(step.config.amount ?? '') || values.unit !== String(step.config.unit ?? ''))
  const outs = branchesOf(step.type)
  return (
    <div className="card">
      <h2>{typeLabel(step.type)}{draft ? t('wfe.new') : ''}</h2>
      {faults && faults.length > 0 && (
        <div className="alert error" role="alert" data-testid="step-faults">
          <strong>{t('wfe.stops')}</strong>
          <ul>{faults.map((f) => <li key={f}>{f}</li>)}</ul>
        </div>
      )}
      {draft && <p className="small muted">{t('wfe.draftHint')}</p>}
      <form onSubmit={submit} noValidate>
        <ErrorBox error={save.error} shown={shown} />
        {local && <div className="alert error" role="alert">{t('ui.checkFields', { count: 1 })}</div>}
        {save.isSuccess && !draft && <div className="alert ok" role="status">{t('ui.saved')}{delayWaiting > 0 && ` ${t('wfe.delaySaved', { count: delayWaiting })}`}</div>}
        {delayChanged && delayWaiting > 0 && !save.isPending && (
          <div className="alert warn" role="status" data-testid="delay-change">
            {t('wfe.delayChange', { count: delayWaiting })}
          </div>
        )}
        <Field label={t('wfe.stepName')} value={name} onChange={(e) => setName(e.target.value)} error={errorOf('name')} />
        {step.type === 'TRIGGER'
          ? <Field label={t('wf.trigger')} value={values.eventName ?? String(step.config.eventName ?? '')} onChange={(e) => setValues((v) => ({ ...v, eventName: e.target.value }))} hint={t('wfe.triggerStepHint')} error={fieldError(save.error, 'eventName')} />
          : <StepFields type={step.type} v={values} set={(k, x) => setValues((v) => ({ ...v, [k]: x }))} errorOf={errorOf} templates={templates} fields={fields} />}
        <div className="row">
          <button type="submit" disabled={save.isPending}>{draft ? t('wfe.addStep') : t('wfe.saveStep')}</button>
          {draft
            ? <button type="button" className="secondary" onClick={onDelete}>{t('wfe.discard')}</button>
            : step.type !== 'TRIGGER' && <ConfirmButton label={t('wfe.deleteStep')} confirm={t('wfe.deleteStepConfirm')} onConfirm={onDelete} />}
        </div>
      </form>
      {!draft && outs && outs.length === 0 ? null : !draft && (
        <Ways project={project} wf={wf} step={step} steps={steps} branches={outs} onFault={onFault} onDone={() => qc.invalidateQueries({ queryKey: ['workflow', project.id, wf.id] })} />
      )}
    </div>
  )
}

/** The step's ways out as selects: the keyboard's way to connect steps (the canvas's handles need a pointer). */
function Ways({ project, wf, step, steps, branches, onFault, onDone }: {
  project: Project; wf: Workflow; step: Step; steps: Step[]; branches: string[] | null; onFault: (err: unknown) => void; onDone: () => void
}) {
  const [error, setError] = useState<unknown>(null)
  const targets = steps.filter((s) => s.type !== 'TRIGGER' && s.id !== step.id)
  const change = async (branch: string | null, to: string) => {
    setError(null)
    const old = wf.transitions.find((tr) => tr.fromStepId === step.id && (branch ? tr.branch === branch : true))
    try {
      if (old) await del(`/workflows/${wf.id}/transitions/${old.id}`, project.id)
      if (to) await post(`/workflows/${wf.id}/transitions`, { fromStepId: step.id, toStepId: to, ...(branch ? { branch } : {}) }, project.id)
    } catch (err) {
      setError(err)
      onFault(err)
    }
    onDone()
  }
  return (
    <div className="wf-ways">
      <h3>{t('wfe.nextStep')}</h3>
      <ErrorBox error={error} />
      {(branches ?? [null]).map((b) => {
        const cur = wf.transitions.find((tr) => tr.fromStepId === step.id && (b ? tr.branch === b : true))
        const id = `way-${step.id}-${b ?? 'next'}`
        return (
          <FormField key={b ?? 'next'} label={b ? t('wfe.on', { branch: branchLabel(b) }) : t('wfe.then')} id={id}>
            {(c) => (
              <select {...c} value={cur?.toStepId ?? ''} onChange={(e) => change(b, e.target.value)}>
                <option value="">{b === 'timeout' ? t('wfe.nothingTimeout') : t('wfe.nothingYet')}</option>
                {targets.map((s) => <option key={s.id} value={s.id}>{s.name} ({typeLabel(s.type)})</option>)}
              </select>
            )}
          </FormField>
        )
      })}
    </div>
  )
}
