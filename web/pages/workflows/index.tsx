import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { get, post, type Project } from '../../api'
import { Badge, Empty, ErrorBox, Field, fieldError, formatDate, Loading, PageHead, Pager } from '../../components/ui'
import type { ExecutionList, Workflow, WorkflowList } from './graph'
import './workflows.css'

/** The project's workflows (status, trigger, executions) and a form to create one. */
export function WorkflowsPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const [page, setPage] = useState(1)
  const [enabled, setEnabled] = useState('')
  const [adding, setAdding] = useState(false)
  const list = useQuery({
    queryKey: ['workflows', project.id, page, enabled],
    queryFn: () => get<WorkflowList>(`/workflows?page=${page}&pageSize=25${enabled ? `&enabled=${enabled}` : ''}`, project.id),
  })
  const create = useMutation({
    mutationFn: (body: Record<string, string>) => post<Workflow>('/workflows', body, project.id),
    onSuccess: async (w) => { await qc.invalidateQueries({ queryKey: ['workflows', project.id] }); navigate(`/workflows/${w.id}`) },
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    create.mutate({ name: String(f.get('name') ?? ''), eventName: String(f.get('eventName') ?? '').trim() })
  }
  return (
    <div>
      <PageHead title="Workflows">
        <button type="button" onClick={() => setAdding((a) => !a)} aria-expanded={adding}>New workflow</button>
      </PageHead>
      {adding && (
        <form className="card" onSubmit={submit} noValidate>
          <h2>New workflow</h2>
          <p className="small muted">It starts disabled, with its trigger: draw the steps, then enable it.</p>
          <ErrorBox error={create.error} shown={['name', 'eventName']} />
          <div className="row">
            <Field label="Name" name="name" required autoFocus error={fieldError(create.error, 'name')} />
            <Field label="Trigger event" name="eventName" required placeholder="signup" hint="A tracked event (POST /v1/track) or email.opened, contact.subscribed…" error={fieldError(create.error, 'eventName')} />
            <button type="submit" disabled={create.isPending}>Create</button>
          </div>
        </form>
      )}
      <div className="card">
        <div className="row wf-filter">
          <div className="field"><span><label htmlFor="wf-enabled">Status</label></span>
            <select id="wf-enabled" value={enabled} onChange={(e) => { setEnabled(e.target.value); setPage(1) }}>
              <option value="">All</option><option value="true">Enabled</option><option value="false">Disabled</option>
            </select>
          </div>
        </div>
      </div>
      <div className="card">
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data?.data.length === 0 && (enabled
          ? <Empty title={`No ${enabled === 'true' ? 'enabled' : 'disabled'} workflows`}>Choose another status.</Empty>
          : <Empty title="No workflows yet">Create one with “New workflow”: it runs steps (emails, delays, waits, conditions) for each contact that sends its trigger event.</Empty>)}
        {list.data && list.data.data.length > 0 && (
          <>
            <div className="table-wrap"><table>
              <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Trigger event</th><th scope="col">Executions</th><th scope="col">Updated</th></tr></thead>
              <tbody>{list.data.data.map((w) => (
                <tr key={w.id}>
                  <td><Link href={`/workflows/${w.id}`}>{w.name}</Link></td>
                  <td><Badge status={w.enabled ? 'ok' : 'pending'}>{w.enabled ? 'Enabled' : 'Disabled'}</Badge></td>
                  <td><code>{w.triggerConfig.eventName}</code></td>
                  <td><ExecutionCount project={project} id={w.id} /></td>
                  <td>{formatDate(w.updatedAt)}</td>
                </tr>
              ))}</tbody>
            </table></div>
            <Pager where={`Page ${page} of ${list.data.totalPages}`} hasPrev={page > 1} hasNext={page < list.data.totalPages}
              onPrev={() => setPage((p) => p - 1)} onNext={() => setPage((p) => p + 1)} />
          </>
        )}
      </div>
    </div>
  )
}

/** The total of a workflow's executions (the executions list's `total`), and a link to them. */
function ExecutionCount({ project, id }: { project: Project; id: string }) {
  const q = useQuery({ queryKey: ['executions', project.id, id, 'count'], queryFn: () => get<ExecutionList>(`/workflows/${id}/executions?limit=1`, project.id) })
  return <Link href={`/workflows/${id}/executions`}>{q.data ? formatNumber(q.data.total) : '…'}<span className="sr-only"> executions</span></Link>
}

export { WorkflowEditor } from './editor'
import { formatNumber } from '../../format'
export { WorkflowExecutions } from './executions'
