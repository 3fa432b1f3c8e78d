import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useMemo, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { type Answer, ApiError, call, del, get, type Narrowed, patch, post, type Project } from '../../api'
import { Badge, ConfirmButton, Empty, ErrorBox, Field, fieldError, formatDate, Loading, PageHead } from '../../components/ui'
import { t } from '../../i18n'
import { type ApiTree, type FieldInfo, fromApi, rowPaths, toApi, type Tree, TreeEditor } from './builder'
import { Members } from './members'
import { formatNumber } from '../../format'

/** A segment; the document does not describe its condition's tree, so it is narrowed here. */
export type Segment = Narrowed<Answer<'/segments/{id}'>, { condition: ApiTree | null }>

export const segmentsQuery = (projectId: string) => ({ queryKey: ['segments', projectId], queryFn: () => get<Segment[]>('/segments', projectId) })

export function SegmentsPage({ project }: { project: Project }) {
  const list = useQuery(segmentsQuery(project.id))
  return (
    <div>
      <PageHead title={t('nav.segments')}><Link className="button" href="/segments/new">{t('seg.new')}</Link></PageHead>
      <div className="card">
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data?.length === 0 && (
          <Empty title={t('seg.none')}>
            <p><Link href="/segments/new">{t('seg.create')}</Link>{t('seg.noneText')}</p>
          </Empty>
        )}
        {list.data && list.data.length > 0 && (
          <div className="table-wrap"><table>
            <thead><tr><th scope="col">{t('seg.name')}</th><th scope="col">{t('seg.type')}</th><th scope="col">{t('seg.members')}</th><th scope="col">{t('seg.events')}</th><th scope="col">{t('seg.updated')}</th></tr></thead>
            <tbody>{list.data.map((s) => (
              <tr key={s.id}>
                <td><Link href={`/segments/${s.id}`}>{s.name}</Link>{s.description && <div className="small muted">{s.description}</div>}</td>
                <td>{s.type === 'DYNAMIC' ? t('seg.dynamic') : t('seg.static')}</td>
                <td>{formatNumber(s.memberCount)}</td>
                <td>{s.trackMembership ? <Badge status="ok">{t('seg.tracked')}</Badge> : <span className="muted">{t('seg.off')}</span>}</td>
                <td>{formatDate(s.updatedAt)}</td>
              </tr>
            ))}</tbody>
          </table></div>
        )}
      </div>
    </div>
  )
}

interface FieldsResult { contact: FieldInfo[] }

/** The field catalogue: the engine's fields seen in the project (GET /workflows/fields) and the project's segments. */
export function useFields(project: Project) {
  const fields = useQuery({ queryKey: ['filter-fields', project.id], queryFn: () => get<FieldsResult>('/workflows/fields', project.id) })
  const segments = useQuery(segmentsQuery(project.id))
  const all = useMemo<FieldInfo[]>(() => [
    ...(fields.data?.contact ?? []),
    ...(segments.data ?? []).map((s) => ({ field: `segment.${s.id}`, label: s.name, kind: 'segment' as const, operators: ['memberOfSegment', 'notMemberOfSegment'] })),
  ], [fields.data, segments.data])
  return { fields: all, ready: !fields.isPending && !segments.isPending, error: fields.error ?? segments.error }
}

/** The live count of the condition being edited: POST /segments/preview, 400 ms after the last change. */
function useLiveCount(project: Project, tree: ApiTree, segmentId?: string) {
  const json = JSON.stringify(tree)
  const [settled, setSettled] = useState(json)
  useEffect(() => {
    const timer = setTimeout(() => setSettled(json), 400)
    return () => clearTimeout(timer)
  }, [json])
  const q = useQuery({
    queryKey: ['segment-preview', project.id, segmentId ?? null, settled],
    queryFn: ({ signal }) => call<{ count: number }>('POST', '/segments/preview', { body: { condition: JSON.parse(settled), ...(segmentId ? { segmentId } : {}) }, project: project.id, signal }),
    placeholderData: keepPreviousData, retry: false, staleTime: 5_000,
  })
  return { ...q, waiting: settled !== json || q.isFetching }
}

function LiveCount({ count }: { count: ReturnType<typeof useLiveCount> }) {
  const bad = count.error instanceof ApiError && count.error.status === 422
  let text: string
  if (count.error) text = bad ? t('seg.fix') : t('seg.countFailed', { message: (count.error as Error).message })
  else if (count.data) text = t('seg.matchNow', { count: count.data.count })
  else text = t('seg.counting')
  return (
    <p className={`live-count${count.error ? ' bad' : ''}`} role="status" aria-live="polite" aria-busy={count.waiting}>
      <strong>{text}</strong>{count.waiting && !count.error && count.data && <span className="muted">{t('seg.countingMore')}</span>}
    </p>
  )
}

/**
 * The condition editor with its live count; `error`: the save's error (its field paths highlight conditions).
 * The pages drop a save's error when the tree changes, so the live count's 422 then shows the paths.
 */
function ConditionEditor({ project, tree, setTree, error, segmentId }: { project: Project; tree: Tree; setTree: (tree: Tree) => void; error: unknown; segmentId?: string }) {
  const { fields, ready, error: fieldsError } = useFields(project)
  const apiTree = useMemo(() => toApi(tree), [tree])
  const count = useLiveCount(project, apiTree, segmentId)
  // The save's errors first; while editing, the live count's 422 shows where the condition is wrong.
  const shown = error instanceof ApiError && error.fields.some((f) => f.field.startsWith('condition')) ? error : count.error
  return (
    <section className="builder" aria-labelledby="conditions-title">
      <div className="row head-row">
        <h2 id="conditions-title">{t('seg.conditions')}</h2>
        <LiveCount count={count} />
      </div>
      <ErrorBox error={fieldsError} />
      {!ready ? <Loading label={t('seg.loadingFields')} /> : (
        <TreeEditor tree={tree} onChange={setTree} path="condition" label="" depth={1} ctx={{ fields, error: shown, selfId: segmentId }} />
      )}
    </section>
  )
}

export function NewSegment({ project }: { project: Project }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const [type, setType] = useState<'DYNAMIC' | 'STATIC'>('DYNAMIC')
  const [tree, setTree] = useState<Tree>(() => fromApi(null, new Set()))
  const create = useMutation({
    mutationFn: (body: Record<string, unknown>) => post<Segment>('/segments', body, project.id),
    onSuccess: async (s) => { await qc.invalidateQueries({ queryKey: ['segments', project.id] }); navigate(`/segments/${s.id}`) },
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    const description = String(f.get('description') ?? '').trim()
    create.mutate({
      name: String(f.get('name') ?? ''), ...(description ? { description } : {}), type,
      ...(type === 'DYNAMIC' ? { condition: toApi(tree) } : {}), trackMembership: f.get('track') === 'on',
    })
  }
  return (
    <div>
      <PageHead title={t('seg.new')} />
      <p className="small muted"><Link href="/segments">{t('seg.all')}</Link></p>
      <form className="card" onSubmit={submit} noValidate>
        <ErrorBox error={create.error} shown={['name', 'description', 'type', ...rowPaths(tree)]} />
        <div className="row">
          <Field label={t('seg.name')} name="name" required maxLength={100} error={fieldError(create.error, 'name')} />
          <Field label={t('seg.description')} name="description" maxLength={500} placeholder={t('seg.descriptionPlaceholder')} error={fieldError(create.error, 'description')} />
        </div>
        <fieldset className="choice">
          <legend>{t('seg.type')}</legend>
          <label><input type="radio" name="type" value="DYNAMIC" checked={type === 'DYNAMIC'} onChange={() => setType('DYNAMIC')} /> {t('seg.dynamicText')}</label>
          <label><input type="radio" name="type" value="STATIC" checked={type === 'STATIC'} onChange={() => setType('STATIC')} /> {t('seg.staticText')}</label>
        </fieldset>
        <div className="check"><input id="new-track" name="track" type="checkbox" /><label htmlFor="new-track">{t('seg.track1')}<code>segment.&lt;slug&gt;.entry</code>{t('seg.track2')}<code>.exit</code>{t('seg.track3')}</label></div>
        {type === 'DYNAMIC' && <ConditionEditor project={project} tree={tree} setTree={(next) => { setTree(next); if (create.isError) create.reset() }} error={create.error} />}
        {type === 'STATIC' && <p className="muted">{t('seg.staticAfter')}</p>}
        <button type="submit" disabled={create.isPending}>{create.isPending ? t('seg.creating') : t('seg.createButton')}</button>
      </form>
    </div>
  )
}

export function SegmentDetail({ project, id }: { project: Project; id: string }) {
  const seg = useQuery({ queryKey: ['segment', project.id, id], queryFn: () => get<Segment>(`/segments/${id}`, project.id) })
  if (seg.isPending) return <Loading />
  if (seg.error) return <><ErrorBox error={seg.error} /><Link href="/segments">{t('seg.allPlain')}</Link></>
  return <SegmentView key={seg.data.id} project={project} seg={seg.data} />
}

function SegmentView({ project, seg }: { project: Project; seg: Segment }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const fields = useFields(project)
  const [tree, setTree] = useState<Tree | null>(null)
  // The stored condition becomes the form once the catalogue says which fields are known.
  useEffect(() => {
    if (fields.ready && tree === null) setTree(fromApi(seg.condition, new Set(fields.fields.map((f) => f.field))))
  }, [fields.ready, fields.fields, seg.condition, tree])
  const saved = async (s: Segment) => {
    qc.setQueryData(['segment', project.id, seg.id], s)
    await Promise.all([qc.invalidateQueries({ queryKey: ['segments', project.id] }), qc.invalidateQueries({ queryKey: ['segment-members', project.id, seg.id] })])
  }
  const save = useMutation({ mutationFn: (body: Record<string, unknown>) => patch<Segment>(`/segments/${seg.id}`, body, project.id), onSuccess: saved })
  const track = useMutation({ mutationFn: (on: boolean) => patch<Segment>(`/segments/${seg.id}`, { trackMembership: on }, project.id), onSuccess: saved })
  const refresh = useMutation({
    mutationFn: () => post(`/segments/${seg.id}/${seg.type === 'DYNAMIC' && seg.trackMembership ? 'compute' : 'refresh'}`, {}, project.id),
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: ['segment', project.id, seg.id] }); await qc.invalidateQueries({ queryKey: ['segments', project.id] }) },
  })
  const remove = useMutation({
    mutationFn: () => del(`/segments/${seg.id}`, project.id),
    onSuccess: async () => {
      qc.removeQueries({ queryKey: ['segment', project.id, seg.id] })
      await qc.invalidateQueries({ queryKey: ['segments', project.id] })
      navigate('/segments')
    },
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    const description = String(f.get('description') ?? '').trim()
    save.mutate({ name: String(f.get('name') ?? ''), description: description || null, ...(seg.type === 'DYNAMIC' && tree ? { condition: toApi(tree) } : {}) })
  }
  return (
    <div>
      <PageHead title={seg.name}>
        <Badge status={seg.type === 'DYNAMIC' ? 'active' : 'pending'}>{seg.type === 'DYNAMIC' ? t('seg.dynamic') : t('seg.static')}</Badge>
        <ConfirmButton label={t('seg.delete')} confirm={t('seg.deleteConfirm')} onConfirm={() => remove.mutate()} busy={remove.isPending} />
      </PageHead>
      <ErrorBox error={remove.error} />
      <p className="small muted">
        <Link href="/segments">{t('seg.all')}</Link> · {t('seg.counted', { count: seg.memberCount })} · {t('seg.slug')} <code>{seg.slug}</code> · {t('seg.updatedAt', { at: formatDate(seg.updatedAt) })}
      </p>
      <div className="card">
        <div className="row between">
          <div className="check switch">
            <input id="track-switch" type="checkbox" role="switch" checked={seg.trackMembership} aria-checked={seg.trackMembership} disabled={track.isPending} onChange={(e) => track.mutate(e.target.checked)} aria-describedby="track-hint" />
            <label htmlFor="track-switch">{t('seg.trackMembership')}</label>
          </div>
          <button type="button" className="secondary" onClick={() => refresh.mutate()} disabled={refresh.isPending}>
            {refresh.isPending ? t('seg.counting') : seg.type === 'DYNAMIC' && seg.trackMembership ? t('seg.compute') : t('seg.refresh')}
          </button>
        </div>
        <p id="track-hint" className="small muted">
          {seg.trackMembership
            ? <>{t('seg.on1')}<code>segment.{seg.slug}.entry</code>{t('seg.on2')}<code>segment.{seg.slug}.exit</code>{t('seg.on3')}</>
            : <>{t('seg.off1')}<code>segment.{seg.slug}.entry</code> / <code>.exit</code>{t('seg.off2')}</>}
        </p>
        <ErrorBox error={track.error ?? refresh.error} />
      </div>
      <form className="card" onSubmit={submit} noValidate>
        <ErrorBox error={save.error} shown={['name', 'description', ...(tree ? rowPaths(tree) : [])]} />
        {save.isSuccess && <div className="alert ok" role="status">{t('ui.saved')}</div>}
        <div className="row">
          <Field label={t('seg.name')} name="name" defaultValue={seg.name} maxLength={100} error={fieldError(save.error, 'name')} />
          <Field label={t('seg.description')} name="description" defaultValue={seg.description ?? ''} maxLength={500} error={fieldError(save.error, 'description')} />
        </div>
        {seg.type === 'DYNAMIC' && (tree ? <ConditionEditor project={project} tree={tree} setTree={(next) => { setTree(next); if (save.isError || save.isSuccess) save.reset() }} error={save.error} segmentId={seg.id} /> : <Loading label={t('seg.loadingFields')} />)}
        <button type="submit" disabled={save.isPending}>{save.isPending ? t('ui.saving') : t('ui.save')}</button>
      </form>
      <Members project={project} seg={seg} />
    </div>
  )
}
