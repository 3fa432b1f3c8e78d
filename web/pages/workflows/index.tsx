import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { get, post, type Project } from '../../api'
import { Badge, Empty, ErrorBox, Field, fieldError, formatDate, FormField, Loading, PageHead, Pager } from '../../components/ui'
import { t } from '../../i18n'
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
      <PageHead title={t('nav.workflows')}>
        <button type="button" onClick={() => setAdding((a) => !a)} aria-expanded={adding}>{t('wf.new')}</button>
      </PageHead>
      {adding && (
        <form className="card" onSubmit={submit} noValidate>
          <h2>{t('wf.new')}</h2>
          <p className="small muted">{t('wf.startsDisabled')}</p>
          <ErrorBox error={create.error} shown={['name', 'eventName']} />
          <div className="row">
            <Field label={t('wf.name')} name="name" required autoFocus error={fieldError(create.error, 'name')} />
            <Field label={t('wf.trigger')} name="eventName" required placeholder={t('wf.triggerPlaceholder')} hint={t('wf.triggerHint')} error={fieldError(create.error, 'eventName')} />
            <button type="submit" disabled={create.isPending}>{t('wf.create')}</button>
          </div>
        </form>
      )}
      <div className="card">
        <div className="row wf-filter">
          <FormField label={t('wf.status')} id="wf-enabled">
            {(c) => (
              <select {...c} value={enabled} onChange={(e) => { setEnabled(e.target.value); setPage(1) }}>
                <option value="">{t('ui.all')}</option><option value="true">{t('wf.enabled')}</option><option value="false">{t('wf.disabled')}</option>
              </select>
            )}
          </FormField>
        </div>
      </div>
      <div className="card">
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data?.data.length === 0 && (enabled
          ? <Empty title={enabled === 'true' ? t('wf.noEnabled') : t('wf.noDisabled')}>{t('wf.otherStatus')}</Empty>
          : <Empty title={t('wf.none')}>{t('wf.noneText')}</Empty>)}
        {list.data && list.data.data.length > 0 && (
          <>
            <div className="table-wrap"><table>
              <thead><tr><th scope="col">{t('wf.name')}</th><th scope="col">{t('wf.status')}</th><th scope="col">{t('wf.trigger')}</th><th scope="col">{t('wf.executions')}</th><th scope="col">{t('wf.updated')}</th></tr></thead>
              <tbody>{list.data.data.map((w) => (
                <tr key={w.id}>
                  <td><Link href={`/workflows/${w.id}`}>{w.name}</Link></td>
                  <td><Badge status={w.enabled ? 'ok' : 'pending'}>{w.enabled ? t('wf.enabled') : t('wf.disabled')}</Badge></td>
                  <td><code>{w.triggerConfig.eventName}</code></td>
                  <td><ExecutionCount project={project} id={w.id} /></td>
                  <td>{formatDate(w.updatedAt)}</td>
                </tr>
              ))}</tbody>
            </table></div>
            <Pager where={t('ui.pageOf', { page, pages: list.data.totalPages })} hasPrev={page > 1} hasNext={page < list.data.totalPages}
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
  return <Link href={`/workflows/${id}/executions`}>{q.data ? formatNumber(q.data.total) : '…'}<span className="sr-only">{t('wf.executionsSr')}</span></Link>
}

export { WorkflowEditor } from './editor'
import { formatNumber } from '../../format'
export { WorkflowExecutions } from './executions'
