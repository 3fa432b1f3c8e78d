import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useId, useRef, useState } from 'react'
import { get, type Job, post, type Project } from '../../api'
import { ErrorBox, FormField } from '../../components/ui'
import { segmentsQuery } from '../segments'
import { formatNumber } from '../../format'
import { type MessageKey, t } from '../../i18n'

/** What a bulk action applies to: the ticked rows, or every contact the current filter matches. */
export type Target = { kind: 'ids'; ids: string[] } | { kind: 'filter'; filter: Record<string, unknown>; count: number | undefined }

const ACTIONS: ReadonlyArray<{ value: string; label: MessageKey }> = [
  { value: 'subscribe', label: 'bulk.subscribe' },
  { value: 'unsubscribe', label: 'bulk.unsubscribe' },
  { value: 'addToSegment', label: 'bulk.addToSegment' },
  { value: 'removeFromSegment', label: 'bulk.removeFromSegment' },
  { value: 'setField', label: 'bulk.setField' },
  { value: 'delete', label: 'ui.delete' },
]

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
  const what = n === undefined ? t('bulk.everyMatching') : t('contacts.count', { count: n })
  const actionKey = ACTIONS.find((a) => a.value === action)?.label
  const label = actionKey ? t(actionKey) : action
  const segName = statics.find((s) => s.id === segmentId)?.name ?? t('bulk.theSegment')
  const question: Record<string, string> = {
    subscribe: t('bulk.qSubscribe', { what }), unsubscribe: t('bulk.qUnsubscribe', { what }),
    addToSegment: t('bulk.qAdd', { what, segment: segName }), removeFromSegment: t('bulk.qRemove', { what, segment: segName }),
    setField: value === '' ? t('bulk.qUnset', { field: field.trim(), what }) : t('bulk.qSet', { field: field.trim(), value, what }),
    delete: t('bulk.qDelete', { what }),
  }
  const submit = (e: FormEvent) => { e.preventDefault(); setAsking(true) }
  if (jobId) {
    const r = job.data?.result
    return (
      <section className="bulkbar stack" aria-label={t('bulk.label')}>
        <ErrorBox error={job.error} />
        <label className="field">
          <span>{job.data ? t('bulk.progress', { action: label, state: t(job.data.status === 'completed' ? 'bulk.done' : job.data.status === 'failed' ? 'bulk.failed' : 'bulk.working'), processed: formatNumber(job.data.processed), total: formatNumber(job.data.total) }) : t('fields.starting')}</span>
          <progress max={100} value={job.data?.progress ?? 0} />
        </label>
        {job.data?.error && <div className="alert error" role="alert">{job.data.error}</div>}
        {r && <p role="status">{t('bulk.outcome', { updated: formatNumber(r.updated), skipped: formatNumber(r.skipped), failed: formatNumber(r.failed) })}</p>}
        {(done || job.data?.status === 'failed') && <button type="button" className="secondary" onClick={() => { run.reset(); setAsking(false) }}>{t('fields.done')}</button>}
      </section>
    )
  }
  return (
    <form className="bulkbar" onSubmit={submit} aria-label={t('bulk.label')}>
      <ErrorBox error={run.error} shown={['segmentId', 'field', 'value']} />
      <div className="row">
        <FormField label={t('bulk.actionOn', { what })} id={`${uid}-a`}>
          {(c) => (
            <select {...c} value={action} onChange={(e) => { setAction(e.target.value); setAsking(false); run.reset() }}>
              {ACTIONS.map((a) => <option key={a.value} value={a.value}>{t(a.label)}</option>)}
            </select>
          )}
        </FormField>
        {(action === 'addToSegment' || action === 'removeFromSegment') && (
          <FormField label={t('bulk.segment')} id={`${uid}-s`} hint={segments.data && statics.length === 0 ? t('bulk.noStatic') : undefined}>
            {(c) => (
              <select {...c} value={segmentId} onChange={(e) => setSegmentId(e.target.value)} required>
                <option value="">{t('bulk.choose')}</option>
                {statics.map((s) => <option key={s.id} value={s.id}>{s.name}</option>)}
              </select>
            )}
          </FormField>
        )}
        {action === 'setField' && (
          <>
            <FormField label={t('contact.field')} id={`${uid}-f`}>
              {(c) => <><input {...c} list={`${uid}-fl`} value={field} onChange={(e) => setField(e.target.value)} required />
                <datalist id={`${uid}-fl`}>{fields.map((f) => <option key={f} value={f} />)}</datalist></>}
            </FormField>
            <FormField label={t('contact.value')} id={`${uid}-v`} hint={t('bulk.emptyRemoves')}>
              {(c) => <input {...c} value={value} onChange={(e) => setValue(e.target.value)} />}
            </FormField>
          </>
        )}
        {!asking && <button type="submit" disabled={n === 0}>{t('bulk.apply')}</button>}
      </div>
      {asking && (
        <div className="row confirm" role="alert">
          <span>{question[action]}</span>
          <button type="button" ref={yes} className={action === 'delete' ? 'danger' : ''} disabled={run.isPending} onClick={() => { setAsking(false); run.mutate() }}>{t('ui.yes', { action: label.toLowerCase() })}</button>
          <button type="button" className="secondary" onClick={() => setAsking(false)}>{t('ui.cancel')}</button>
        </div>
      )}
    </form>
  )
}
