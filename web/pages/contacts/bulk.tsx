import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useId, useRef, useState } from 'react'
import { get, type Job, post, type Project } from '../../api'
import { ErrorBox } from '../../components/ui'
import { segmentsQuery } from '../segments'
import { formatNumber } from '../../format'

/** What a bulk action applies to: the ticked rows, or every contact the current filter matches. */
export type Target = { kind: 'ids'; ids: string[] } | { kind: 'filter'; filter: Record<string, unknown>; count: number | undefined }

const ACTIONS = [
  { value: 'subscribe', label: 'Subscribe' },
  { value: 'unsubscribe', label: 'Unsubscribe' },
  { value: 'addToSegment', label: 'Add to a static segment' },
  { value: 'removeFromSegment', label: 'Remove from a static segment' },
  { value: 'setField', label: 'Set a field' },
  { value: 'delete', label: 'Delete' },
] as const

/** The bulk bar: an action, its arguments, a confirmation, then the job's progress (POST /contacts/bulk). */
export function BulkBar({ project, target, fields }: { project: Project; target: Target; fields: string[] }) {
  const qc = useQueryClient()
  const uid = useId()
  const [action, setAction] = useState<string>('subscribe')
  const [segmentId, setSegmentId] = useState('')
  const [field, setField] = useState('')
  const [value, setValue] = useState('')
  const [asking, setAsking] = useState(false)
  // The question takes the focus when it appears (a keyboard user answers it next).
  const yes = useRef<HTMLButtonElement>(null)
  useEffect(() => { if (asking) yes.current?.focus() }, [asking])
  const segments = useQuery({ ...segmentsQuery(project.id), enabled: action === 'addToSegment' || action === 'removeFromSegment' })
  const statics = (segments.data ?? []).filter((s) => s.type === 'STATIC')
  const run = useMutation({
    mutationFn: () => post<{ jobId: string; total: number }>('/contacts/bulk', {
      action,
      ...(target.kind === 'ids' ? { contactIds: target.ids } : { filter: target.filter }),
      ...(action === 'addToSegment' || action === 'removeFromSegment' ? { segmentId } : {}),
      ...(action === 'setField' ? { field: field.trim(), value: value === '' ? null : value } : {}),
    }, project.id),
  })
  const jobId = run.data?.jobId
  const job = useQuery({
    queryKey: ['bulk-job', project.id, jobId],
    queryFn: () => get<Job>(`/contacts/bulk/${jobId}`, project.id),
    enabled: Boolean(jobId),
    refetchInterval: (q) => (q.state.data && (q.state.data.status === 'completed' || q.state.data.status === 'failed') ? false : 500),
  })
  const done = job.data?.status === 'completed'
  useEffect(() => { if (done) qc.invalidateQueries({ queryKey: ['contacts', project.id] }) }, [done, qc, project.id])
  const n = target.kind === 'ids' ? target.ids.length : target.count
  const what = n === undefined ? 'every matching contact' : `${formatNumber(n)} contact${n === 1 ? '' : 's'}`
  const label = ACTIONS.find((a) => a.value === action)?.label ?? action
  const segName = statics.find((s) => s.id === segmentId)?.name ?? 'the segment'
  const question: Record<string, string> = {
    subscribe: `Subscribe ${what}?`, unsubscribe: `Unsubscribe ${what}?`,
    addToSegment: `Add ${what} to ${segName}?`, removeFromSegment: `Remove ${what} from ${segName}?`,
    setField: value === '' ? `Remove the field ${field.trim()} from ${what}?` : `Set ${field.trim()} to "${value}" on ${what}?`,
    delete: `Delete ${what}? Deleted contacts and their events cannot be restored.`,
  }
  const submit = (e: FormEvent) => { e.preventDefault(); setAsking(true) }
  if (jobId) {
    const r = job.data?.result
    return (
      <section className="bulkbar stack" aria-label="Bulk action">
        <ErrorBox error={job.error} />
        <label className="field">
          <span>{job.data ? `${label}: ${job.data.status === 'completed' ? 'done' : job.data.status === 'failed' ? 'failed' : 'working'}, ${formatNumber(job.data.processed)} of ${formatNumber(job.data.total)}` : 'Starting…'}</span>
          <progress max={100} value={job.data?.progress ?? 0} />
        </label>
        {job.data?.error && <div className="alert error" role="alert">{job.data.error}</div>}
        {r && <p role="status"><strong>{r.updated}</strong> changed · <strong>{r.skipped}</strong> already so · <strong>{r.failed}</strong> not found</p>}
        {(done || job.data?.status === 'failed') && <button type="button" className="secondary" onClick={() => { run.reset(); setAsking(false) }}>Done</button>}
      </section>
    )
  }
  return (
    <form className="bulkbar" onSubmit={submit} aria-label="Bulk action">
      <ErrorBox error={run.error} shown={['segmentId', 'field', 'value']} />
      <div className="row">
        <div className="field"><span><label htmlFor={`${uid}-a`}>Action on {what}</label></span>
          <select id={`${uid}-a`} value={action} onChange={(e) => { setAction(e.target.value); setAsking(false); run.reset() }}>
            {ACTIONS.map((a) => <option key={a.value} value={a.value}>{a.label}</option>)}
          </select>
        </div>
        {(action === 'addToSegment' || action === 'removeFromSegment') && (
          <div className="field"><span><label htmlFor={`${uid}-s`}>Segment</label></span>
            <select id={`${uid}-s`} value={segmentId} onChange={(e) => setSegmentId(e.target.value)} required>
              <option value="">Choose…</option>
              {statics.map((s) => <option key={s.id} value={s.id}>{s.name}</option>)}
            </select>
            {segments.data && statics.length === 0 && <span className="hint">No static segment yet: create one on the Segments page.</span>}
          </div>
        )}
        {action === 'setField' && (
          <>
            <div className="field"><span><label htmlFor={`${uid}-f`}>Field</label></span>
              <input id={`${uid}-f`} list={`${uid}-fl`} value={field} onChange={(e) => setField(e.target.value)} required />
              <datalist id={`${uid}-fl`}>{fields.map((f) => <option key={f} value={f} />)}</datalist>
            </div>
            <div className="field"><span><label htmlFor={`${uid}-v`}>Value</label></span>
              <input id={`${uid}-v`} value={value} onChange={(e) => setValue(e.target.value)} aria-describedby={`${uid}-vh`} />
              <span id={`${uid}-vh`} className="hint">Empty removes the field.</span>
            </div>
          </>
        )}
        {!asking && <button type="submit" disabled={n === 0}>Apply</button>}
      </div>
      {asking && (
        <div className="row confirm" role="alert">
          <span>{question[action]}</span>
          <button type="button" ref={yes} className={action === 'delete' ? 'danger' : ''} disabled={run.isPending} onClick={() => { setAsking(false); run.mutate() }}>Yes, {label.toLowerCase()}</button>
          <button type="button" className="secondary" onClick={() => setAsking(false)}>Cancel</button>
        </div>
      )}
    </form>
  )
}
