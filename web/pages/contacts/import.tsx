import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useId } from 'react'
import { call, get, type Job, type Project } from '../../api'
import { ErrorBox } from '../../components/ui'

/** CSV import: upload (5 MB at most), then the job's progress bar and its per-row report. */
export function ImportContacts({ project, onClose }: { project: Project; onClose: () => void }) {
  const qc = useQueryClient()
  const fileId = useId()
  const upload = useMutation({
    mutationFn: (file: File) => {
      const form = new FormData()
      form.append('file', file)
      return call<{ jobId: string }>('POST', '/contacts/import', { body: form, project: project.id })
    },
  })
  const jobId = upload.data?.jobId
  const job = useQuery({
    queryKey: ['import', project.id, jobId],
    queryFn: () => get<Job>(`/contacts/import/${jobId}`, project.id),
    enabled: Boolean(jobId),
    refetchInterval: (q) => (q.state.data && (q.state.data.status === 'completed' || q.state.data.status === 'failed') ? false : 500),
  })
  const finished = job.data?.status === 'completed' || job.data?.status === 'failed'
  const completed = job.data?.status === 'completed'
  useEffect(() => { if (completed) qc.invalidateQueries({ queryKey: ['contacts', project.id] }) }, [completed, qc, project.id])
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const file = new FormData(e.currentTarget).get('file')
    if (file instanceof File && file.size > 0) upload.mutate(file)
  }
  const r = job.data?.result
  return (
    <div className="card">
      <h2>Import contacts from CSV</h2>
      {!jobId && (
        <form onSubmit={submit}>
          <p className="small muted">The first row names the columns: <code>email</code> (required), <code>subscribed</code> (optional); every other column becomes a data field, typed from its values. At most 5 MB.</p>
          <ErrorBox error={upload.error} />
          <div className="row">
            <div className="field"><span><label htmlFor={fileId}>CSV file</label></span><input id={fileId} name="file" type="file" accept=".csv,text/csv" required /></div>
            <button type="submit" disabled={upload.isPending}>{upload.isPending ? 'Uploading…' : 'Import'}</button>
            <button type="button" className="secondary" onClick={onClose}>Cancel</button>
          </div>
        </form>
      )}
      {jobId && (
        <div className="stack">
          <ErrorBox error={job.error} />
          <label className="field">
            <span>{job.data ? `${job.data.status === 'queued' ? 'Waiting for a worker' : job.data.status === 'running' ? 'Importing' : job.data.status === 'completed' ? 'Done' : 'Failed'}: ${job.data.processed.toLocaleString()} of ${job.data.total.toLocaleString()} rows` : 'Starting…'}</span>
            <progress max={100} value={job.data?.progress ?? 0} />
          </label>
          {job.data?.error && <div className="alert error" role="alert">{job.data.error}</div>}
          {r && (
            <div role="status">
              <p><strong>{r.created}</strong> created · <strong>{r.updated}</strong> updated · <strong>{r.skipped}</strong> skipped · <strong>{r.failed}</strong> failed</p>
              {r.errors.length > 0 && (
                <div className="table-wrap"><table>
                  <thead><tr><th scope="col">Row</th><th scope="col">Problem</th></tr></thead>
                  <tbody>{r.errors.map((e) => <tr key={`${e.row}-${e.message}`}><td>{e.row}</td><td>{e.message}</td></tr>)}</tbody>
                </table></div>
              )}
            </div>
          )}
          {finished && <button type="button" className="secondary" onClick={onClose}>Close</button>}
        </div>
      )}
    </div>
  )
}
