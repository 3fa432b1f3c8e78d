import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useMemo, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { ApiError, call, del, get, patch, post, type Project } from '../../api'
import { Badge, ConfirmButton, Empty, ErrorBox, Field, fieldError, formatDate, Loading, PageHead } from '../../components/ui'
import { type ApiTree, type FieldInfo, fromApi, rowPaths, toApi, type Tree, TreeEditor } from './builder'
import { Members } from './members'
import { formatNumber } from '../../format'

export interface Segment {
  id: string; name: string; description: string | null; type: 'DYNAMIC' | 'STATIC'; condition: ApiTree | null
  trackMembership: boolean; memberCount: number; slug: string; projectId: string; createdAt: string; updatedAt: string
}

export const segmentsQuery = (projectId: string) => ({ queryKey: ['segments', projectId], queryFn: () => get<Segment[]>('/segments', projectId) })

export function SegmentsPage({ project }: { project: Project }) {
  const list = useQuery(segmentsQuery(project.id))
  return (
    <div>
      <PageHead title="Segments"><Link className="button" href="/segments/new">New segment</Link></PageHead>
      <div className="card">
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data?.length === 0 && (
          <Empty title="No segments yet">
            <p><Link href="/segments/new">Create a segment</Link>: a dynamic one follows conditions on contact fields, custom data and events; a static one is a list of contacts you keep by hand.</p>
          </Empty>
        )}
        {list.data && list.data.length > 0 && (
          <div className="table-wrap"><table>
            <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Members</th><th scope="col">Membership events</th><th scope="col">Updated</th></tr></thead>
            <tbody>{list.data.map((s) => (
              <tr key={s.id}>
                <td><Link href={`/segments/${s.id}`}>{s.name}</Link>{s.description && <div className="small muted">{s.description}</div>}</td>
                <td>{s.type === 'DYNAMIC' ? 'Dynamic' : 'Static'}</td>
                <td>{formatNumber(s.memberCount)}</td>
                <td>{s.trackMembership ? <Badge status="ok">Tracked</Badge> : <span className="muted">Off</span>}</td>
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
    const t = setTimeout(() => setSettled(json), 400)
    return () => clearTimeout(t)
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
  if (count.error) text = bad ? 'Fix the highlighted conditions to see how many contacts match.' : `The count failed: ${(count.error as Error).message}`
  else if (count.data) text = `${formatNumber(count.data.count)} contact${count.data.count === 1 ? '' : 's'} match${count.data.count === 1 ? 'es' : ''} now`
  else text = 'Counting…'
  return (
    <p className={`live-count${count.error ? ' bad' : ''}`} role="status" aria-live="polite" aria-busy={count.waiting}>
      <strong>{text}</strong>{count.waiting && !count.error && count.data && <span className="muted"> · counting…</span>}
    </p>
  )
}

/**
 * The condition editor with its live count; `error`: the save's error (its field paths highlight conditions).
 * The pages drop a save's error when the tree changes, so the live count's 422 then shows the paths.
 */
function ConditionEditor({ project, tree, setTree, error, segmentId }: { project: Project; tree: Tree; setTree: (t: Tree) => void; error: unknown; segmentId?: string }) {
  const { fields, ready, error: fieldsError } = useFields(project)
  const apiTree = useMemo(() => toApi(tree), [tree])
  const count = useLiveCount(project, apiTree, segmentId)
  // The save's errors first; while editing, the live count's 422 shows where the condition is wrong.
  const shown = error instanceof ApiError && error.fields.some((f) => f.field.startsWith('condition')) ? error : count.error
  return (
    <section className="builder" aria-labelledby="conditions-title">
      <div className="row head-row">
        <h2 id="conditions-title">Conditions</h2>
        <LiveCount count={count} />
      </div>
      <ErrorBox error={fieldsError} />
      {!ready ? <Loading label="Loading the fields…" /> : (
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
      <PageHead title="New segment" />
      <p className="small muted"><Link href="/segments">← All segments</Link></p>
      <form className="card" onSubmit={submit} noValidate>
        <ErrorBox error={create.error} shown={['name', 'description', 'type', ...rowPaths(tree)]} />
        <div className="row">
          <Field label="Name" name="name" required maxLength={100} error={fieldError(create.error, 'name')} />
          <Field label="Description" name="description" maxLength={500} placeholder="Optional, for your team" error={fieldError(create.error, 'description')} />
        </div>
        <fieldset className="choice">
          <legend>Type</legend>
          <label><input type="radio" name="type" value="DYNAMIC" checked={type === 'DYNAMIC'} onChange={() => setType('DYNAMIC')} /> Dynamic: the contacts that match conditions, always up to date</label>
          <label><input type="radio" name="type" value="STATIC" checked={type === 'STATIC'} onChange={() => setType('STATIC')} /> Static: a list of contacts you add and remove by email</label>
        </fieldset>
        <div className="check"><input id="new-track" name="track" type="checkbox" /><label htmlFor="new-track">Track membership: emit <code>segment.&lt;slug&gt;.entry</code> and <code>.exit</code> events as contacts join and leave (they can start workflows)</label></div>
        {type === 'DYNAMIC' && <ConditionEditor project={project} tree={tree} setTree={(t) => { setTree(t); if (create.isError) create.reset() }} error={create.error} />}
        {type === 'STATIC' && <p className="muted">After creating it, add contacts to it by email on its page.</p>}
        <button type="submit" disabled={create.isPending}>{create.isPending ? 'Creating…' : 'Create segment'}</button>
      </form>
    </div>
  )
}

export function SegmentDetail({ project, id }: { project: Project; id: string }) {
  const seg = useQuery({ queryKey: ['segment', project.id, id], queryFn: () => get<Segment>(`/segments/${id}`, project.id) })
  if (seg.isPending) return <Loading />
  if (seg.error) return <><ErrorBox error={seg.error} /><Link href="/segments">All segments</Link></>
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
        <Badge status={seg.type === 'DYNAMIC' ? 'active' : 'pending'}>{seg.type === 'DYNAMIC' ? 'Dynamic' : 'Static'}</Badge>
        <ConfirmButton label="Delete segment" confirm="Delete this segment?" onConfirm={() => remove.mutate()} busy={remove.isPending} />
      </PageHead>
      <ErrorBox error={remove.error} />
      <p className="small muted">
        <Link href="/segments">← All segments</Link> · {formatNumber(seg.memberCount)} member{seg.memberCount === 1 ? '' : 's'} (counted) · slug <code>{seg.slug}</code> · updated {formatDate(seg.updatedAt)}
      </p>
      <div className="card">
        <div className="row between">
          <div className="check switch">
            <input id="track-switch" type="checkbox" role="switch" checked={seg.trackMembership} aria-checked={seg.trackMembership} disabled={track.isPending} onChange={(e) => track.mutate(e.target.checked)} aria-describedby="track-hint" />
            <label htmlFor="track-switch">Track membership</label>
          </div>
          <button type="button" className="secondary" onClick={() => refresh.mutate()} disabled={refresh.isPending}>
            {refresh.isPending ? 'Counting…' : seg.type === 'DYNAMIC' && seg.trackMembership ? 'Compute membership now' : 'Refresh the count'}
          </button>
        </div>
        <p id="track-hint" className="small muted">
          {seg.trackMembership
            ? <>On: contacts joining emit <code>segment.{seg.slug}.entry</code>, those leaving <code>segment.{seg.slug}.exit</code>; workflows can start on them.</>
            : <>Off: no membership events. Turn it on to emit <code>segment.{seg.slug}.entry</code> / <code>.exit</code> as contacts join and leave.</>}
        </p>
        <ErrorBox error={track.error ?? refresh.error} />
      </div>
      <form className="card" onSubmit={submit} noValidate>
        <ErrorBox error={save.error} shown={['name', 'description', ...(tree ? rowPaths(tree) : [])]} />
        {save.isSuccess && <div className="alert ok" role="status">Saved.</div>}
        <div className="row">
          <Field label="Name" name="name" defaultValue={seg.name} maxLength={100} error={fieldError(save.error, 'name')} />
          <Field label="Description" name="description" defaultValue={seg.description ?? ''} maxLength={500} error={fieldError(save.error, 'description')} />
        </div>
        {seg.type === 'DYNAMIC' && (tree ? <ConditionEditor project={project} tree={tree} setTree={(t) => { setTree(t); if (save.isError || save.isSuccess) save.reset() }} error={save.error} segmentId={seg.id} /> : <Loading label="Loading the fields…" />)}
        <button type="submit" disabled={save.isPending}>{save.isPending ? 'Saving…' : 'Save'}</button>
      </form>
      <Members project={project} seg={seg} />
    </div>
  )
}
