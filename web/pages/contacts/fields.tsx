import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useId, useState } from 'react'
import { Link } from 'wouter'
import { del, get, type Job, post, type Project } from '../../api'
import { ConfirmButton, Empty, ErrorBox, fieldError, Loading, PageHead } from '../../components/ui'
import { formatNumber } from '../../format'

interface FieldInfo { name: string; standard: boolean; type: string; count: number; coverage: number }
interface FieldList { totalContacts: number; fields: FieldInfo[] }
interface FieldChange { field: string; contacts: number; jobId: string | null; changed: number }
interface Retype extends FieldChange { type: string; fit: number; misfit: number; examples: unknown[]; dryRun: boolean }

const TYPES = [['string', 'text'], ['number', 'number'], ['boolean', 'yes/no'], ['date', 'date']] as const

/** The custom fields of the project: list, rename (values follow), change type (misfits counted first), delete. */
export function FieldsPage({ project }: { project: Project }) {
  const list = useQuery({ queryKey: ['contact-fields', project.id], queryFn: () => get<FieldList>('/contacts/fields', project.id) })
  const custom = list.data?.fields.filter((f) => !f.standard) ?? []
  return (
    <div>
      <PageHead title="Fields"><Link className="button secondary" href="/contacts">Back to contacts</Link></PageHead>
      <div className="card">
        <p className="small muted">Custom fields are the data of your contacts (<code>data.plan</code> in templates and conditions). A type is read from the values; changing it converts the values that fit.</p>
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data && custom.length === 0 && <Empty title="No custom fields yet">Import a CSV or send contacts with <code>data</code> to add some.</Empty>}
        {custom.length > 0 && (
          <div className="table-wrap"><table className="rows">
            <thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Contacts</th><th scope="col">Actions</th></tr></thead>
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
          <button type="button" className="secondary" aria-expanded={mode === 'rename'} onClick={() => setMode(mode === 'rename' ? 'none' : 'rename')}>Rename</button>
          <button type="button" className="secondary" aria-expanded={mode === 'retype'} onClick={() => setMode(mode === 'retype' ? 'none' : 'retype')}>Change type</button>
          <ConfirmButton label="Delete" confirm={`Delete ${field.name} from ${formatNumber(field.count)} contacts?`} onConfirm={() => remove.mutate()} busy={remove.isPending} />
        </div>
        <ErrorBox error={remove.error} />
        {mode === 'rename' && (
          <form className="row" onSubmit={(e) => { e.preventDefault(); rename.mutate() }}>
            <div className="field"><span><label htmlFor={`${uid}-to`}>New name of {field.name}</label></span>
              <input id={`${uid}-to`} value={to} onChange={(e) => { setTo(e.target.value); rename.reset() }} aria-invalid={fieldError(rename.error, 'to') ? true : undefined} aria-describedby={`${uid}-toe`} />
              <span id={`${uid}-toe`} className="err">{fieldError(rename.error, 'to') ?? (rename.error ? (rename.error as Error).message : '')}</span>
            </div>
            <button type="submit" disabled={rename.isPending || !to.trim() || to.trim() === field.name}>Rename</button>
          </form>
        )}
        {rename.data && !rename.data.jobId && <p role="status" className="small">Renamed on {formatNumber(rename.data.changed)} contacts.</p>}
        {mode === 'retype' && (
          <div className="stack">
            <div className="row">
              <div className="field"><span><label htmlFor={`${uid}-ty`}>New type of {field.name}</label></span>
                <select id={`${uid}-ty`} value={type} onChange={(e) => { setType(e.target.value); retype.reset() }}>
                  {TYPES.map(([v, l]) => <option key={v} value={v}>{l}</option>)}
                </select>
              </div>
              <button type="button" disabled={!check.data || retype.isPending} onClick={() => retype.mutate()}>Convert</button>
            </div>
            <ErrorBox error={check.error ?? retype.error} />
            {check.data && (
              <p role="status" className="small">
                {formatNumber(check.data.fit)} value{check.data.fit === 1 ? '' : 's'} fit; {check.data.misfit === 0 ? 'every value fits.' : `${formatNumber(check.data.misfit)} ${check.data.misfit === 1 ? 'does' : 'do'} not and stay${check.data.misfit === 1 ? 's' : ''} as ${check.data.misfit === 1 ? 'it is' : 'they are'} (for example ${check.data.examples.map((x) => JSON.stringify(x)).join(', ')}).`}
              </p>
            )}
            {retype.data && !retype.data.jobId && <p role="status" className="small">Converted {formatNumber(retype.data.changed)} values.</p>}
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
      <span>{job.data ? `${job.data.status === 'completed' ? 'Done' : job.data.status === 'failed' ? 'Failed' : 'Working'}: ${formatNumber(job.data.processed)} of ${formatNumber(job.data.total)} contacts` : 'Starting…'}</span>
      <progress max={100} value={job.data?.progress ?? 0} />
    </label>
  )
}
