import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useId, useState } from 'react'
import { Link } from 'wouter'
import { del, get, type Job, post, type Project } from '../../api'
import { ConfirmButton, Empty, ErrorBox, fieldError, FormField, Loading, PageHead } from '../../components/ui'
import { type MessageKey, t } from '../../i18n'
import { formatNumber } from '../../format'

interface FieldInfo { name: string; standard: boolean; type: string; count: number; coverage: number }
interface FieldList { totalContacts: number; fields: FieldInfo[] }
interface FieldChange { field: string; contacts: number; jobId: string | null; changed: number }
interface Retype extends FieldChange { type: string; fit: number; misfit: number; examples: unknown[]; dryRun: boolean }

const TYPES: ReadonlyArray<readonly [string, MessageKey]> = [['string', 'fields.type.string'], ['number', 'fields.type.number'], ['boolean', 'fields.type.boolean'], ['date', 'fields.type.date']]

/** The custom fields of the project: list, rename (values follow), change type (misfits counted first), delete. */
export function FieldsPage({ project }: { project: Project }) {
  const list = useQuery({ queryKey: ['contact-fields', project.id], queryFn: () => get<FieldList>('/contacts/fields', project.id) })
  const custom = list.data?.fields.filter((f) => !f.standard) ?? []
  return (
    <div>
      <PageHead title={t('contacts.fields')}><Link className="button secondary" href="/contacts">{t('fields.back')}</Link></PageHead>
      <div className="card">
        <p className="small muted">{t('fields.intro1')}<code>data.plan</code>{t('fields.intro2')}</p>
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data && custom.length === 0 && <Empty title={t('fields.none')}>{t('fields.noneText1')}<code>data</code>{t('fields.noneText2')}</Empty>}
        {custom.length > 0 && (
          <div className="table-wrap"><table className="rows">
            <thead><tr><th scope="col">{t('contact.field')}</th><th scope="col">{t('contact.type')}</th><th scope="col">{t('contacts.title')}</th><th scope="col">{t('fields.actions')}</th></tr></thead>
            <tbody>{custom.map((f) => <FieldRow key={f.name} project={project} field={f} />)}</tbody>
          </table></div>
        )}
      </div>
    </div>
  )
}

function FieldRow({ project, field }: { project: Project; field: FieldInfo }) {
  const qc = useQueryClient()
  const uid = useId()
  const [mode, setMode] = useState<'none' | 'rename' | 'retype'>('none')
  const [to, setTo] = useState(field.name)
  const [type, setType] = useState(field.type === 'mixed' ? 'string' : field.type)
  const refresh = () => qc.invalidateQueries({ queryKey: ['contact-fields', project.id] })
  const rename = useMutation({ mutationFn: () => post<FieldChange>(`/contacts/fields/${encodeURIComponent(field.name)}/rename`, { to: to.trim() }, project.id), onSuccess: (r) => { if (!r.jobId) refresh() } })
  const check = useQuery({
    queryKey: ['retype-check', project.id, field.name, type],
    queryFn: () => post<Retype>(`/contacts/fields/${encodeURIComponent(field.name)}/retype`, { type, dryRun: true }, project.id),
    enabled: mode === 'retype', retry: false,
  })
  const retype = useMutation({ mutationFn: () => post<Retype>(`/contacts/fields/${encodeURIComponent(field.name)}/retype`, { type }, project.id), onSuccess: (r) => { if (!r.jobId) refresh() } })
  const remove = useMutation({ mutationFn: () => del(`/contacts/fields/${encodeURIComponent(field.name)}`, project.id), onSuccess: refresh })
  const jobId = rename.data?.jobId ?? retype.data?.jobId ?? null
  return (
    <tr>
      <th scope="row"><code>{field.name}</code></th>
      <td>{field.type}</td>
      <td>{formatNumber(field.count)} <span className="small muted">({field.coverage}%)</span></td>
      <td>
        <div className="row">
          <button type="button" className="secondary" aria-expanded={mode === 'rename'} onClick={() => setMode(mode === 'rename' ? 'none' : 'rename')}>{t('fields.rename')}</button>
          <button type="button" className="secondary" aria-expanded={mode === 'retype'} onClick={() => setMode(mode === 'retype' ? 'none' : 'retype')}>{t('fields.retype')}</button>
          <ConfirmButton label={t('ui.delete')} confirm={t('fields.deleteConfirm', { name: field.name, count: field.count })} onConfirm={() => remove.mutate()} busy={remove.isPending} />
        </div>
        <ErrorBox error={remove.error} />
        {mode === 'rename' && (
          <form className="row" onSubmit={(e) => { e.preventDefault(); rename.mutate() }}>
            <FormField label={t('fields.newName', { name: field.name })} id={`${uid}-to`} error={fieldError(rename.error, 'to') ?? (rename.error ? (rename.error as Error).message : undefined)}>
              {(c) => <input {...c} value={to} onChange={(e) => { setTo(e.target.value); rename.reset() }} />}
            </FormField>
            <button type="submit" disabled={rename.isPending || !to.trim() || to.trim() === field.name}>{t('fields.rename')}</button>
          </form>
        )}
        {rename.data && !rename.data.jobId && <p role="status" className="small">{t('fields.renamed', { count: rename.data.changed })}</p>}
        {mode === 'retype' && (
          <div className="stack">
            <div className="row">
              <FormField label={t('fields.newType', { name: field.name })} id={`${uid}-ty`}>
                {(c) => (
                  <select {...c} value={type} onChange={(e) => { setType(e.target.value); retype.reset() }}>
                    {TYPES.map(([v, l]) => <option key={v} value={v}>{t(l)}</option>)}
                  </select>
                )}
              </FormField>
              <button type="button" disabled={!check.data || retype.isPending} onClick={() => retype.mutate()}>{t('fields.convert')}</button>
            </div>
            <ErrorBox error={check.error ?? retype.error} />
            {check.data && (
              <p role="status" className="small">
                {t('fields.fit', { count: check.data.fit })} {check.data.misfit === 0 ? t('fields.allFit') : t('fields.misfit', { count: check.data.misfit, examples: check.data.examples.map((x) => JSON.stringify(x)).join(', ') })}
              </p>
            )}
            {retype.data && !retype.data.jobId && <p role="status" className="small">{t('fields.converted', { count: retype.data.changed })}</p>}
          </div>
        )}
        {jobId && <FieldJob project={project} jobId={jobId} onDone={refresh} />}
      </td>
    </tr>
  )
}

function FieldJob({ project, jobId, onDone }: { project: Project; jobId: string; onDone: () => void }) {
  const job = useQuery({
    queryKey: ['bulk-job', project.id, jobId],
    queryFn: async () => {
      const j = await get<Job>(`/contacts/bulk/${jobId}`, project.id)
      if (j.status === 'completed') onDone()
      return j
    },
    refetchInterval: (q) => (q.state.data && (q.state.data.status === 'completed' || q.state.data.status === 'failed') ? false : 500),
  })
  return (
    <label className="field">
      <span>{job.data ? t('fields.job', { state: t(job.data.status === 'completed' ? 'fields.done' : job.data.status === 'failed' ? 'fields.failed' : 'fields.working'), processed: formatNumber(job.data.processed), total: formatNumber(job.data.total) }) : t('fields.starting')}</span>
      <progress max={100} value={job.data?.progress ?? 0} />
    </label>
  )
}
