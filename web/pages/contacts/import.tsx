import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useId, useState } from 'react'
import { call, get, type Job, type Project } from '../../api'
import { ErrorBox, FormField } from '../../components/ui'
import { formatNumber } from '../../format'
import { type MessageKey, t } from '../../i18n'

/** One column of the file and where it goes (POST /contacts/import/preview answers the automatic mapping). */
export interface ColumnMap { column: string; to: 'email' | 'subscribed' | 'field' | 'ignore'; field?: string; type?: string; existing?: boolean; misfit?: number }
interface Preview { columns: ColumnMap[]; rows: string[][]; totalRows: number; errors: Array<{ row: number; message: string }>; failing: number }

const TYPES = ['auto', 'string', 'number', 'boolean', 'date'] as const
const TYPE_LABEL: Record<string, MessageKey> = { auto: 'import.auto', string: 'fields.type.string', number: 'fields.type.number', boolean: 'fields.type.boolean', date: 'fields.type.date' }

function form(file: File, mapping?: ColumnMap[]) {
  const f = new FormData()
  f.append('file', file)
  if (mapping) f.append('mapping', JSON.stringify(mapping.map(({ column, to, field, type }) => ({ column, to, ...(to === 'field' ? { field, type } : {}) }))))
  return f
}

/**
 * CSV import: choose a file, check the preview (first rows, where each column goes, what would fail),
 * adjust the mapping, import; then the job's progress bar and its per-row report.
 */
export function ImportContacts({ project, onClose }: { project: Project; onClose: () => void }) {
  const qc = useQueryClient()
  const fileId = useId()
  const [file, setFile] = useState<File | null>(null)
  const [mapping, setMapping] = useState<ColumnMap[] | null>(null)
  const preview = useMutation({
    mutationFn: (v: { file: File; mapping?: ColumnMap[] }) => call<Preview>('POST', '/contacts/import/preview', { body: form(v.file, v.mapping), project: project.id }),
    onSuccess: (p) => setMapping(p.columns),
  })
  const upload = useMutation({
    mutationFn: (v: { file: File; mapping: ColumnMap[] }) => call<{ jobId: string }>('POST', '/contacts/import', { body: form(v.file, v.mapping), project: project.id }),
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
  const choose = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget).get('file')
    if (f instanceof File && f.size > 0) { setFile(f); setMapping(null); preview.mutate({ file: f }) }
  }
  const change = (i: number, patch: Partial<ColumnMap>) => {
    if (!mapping || !file) return
    const next = mapping.map((m, j) => (j === i ? { ...m, ...patch } : m))
    setMapping(next)
    upload.reset()
    preview.mutate({ file, mapping: next })
  }
  const p = preview.data
  const r = job.data?.result
  return (
    <div className="card">
      <h2>{t('import.title')}</h2>
      {!jobId && (
        <form onSubmit={choose}>
          <p className="small muted">{t('import.intro')}</p>
          <div className="row">
            <FormField label={t('import.file')} id={fileId}>{(c) => <input {...c} name="file" type="file" accept=".csv,text/csv" required />}</FormField>
            <button type="submit" className="secondary" disabled={preview.isPending}>{preview.isPending ? t('import.reading') : t('import.preview')}</button>
            <button type="button" className="secondary" onClick={onClose}>{t('ui.cancel')}</button>
          </div>
        </form>
      )}
      {!jobId && <ErrorBox error={preview.error} />}
      {!jobId && p && mapping && file && (
        <div className="stack">
          <h3>{t('import.columns')}</h3>
          <div className="table-wrap"><table className="mapping rows">
            <thead><tr><th scope="col">{t('import.column')}</th><th scope="col">{t('import.goesTo')}</th><th scope="col">{t('contact.field')}</th><th scope="col">{t('import.readAs')}</th><th scope="col">{t('import.firstValue')}</th></tr></thead>
            <tbody>{mapping.map((m, i) => {
              const shown = p.columns[i]
              return (
                <tr key={m.column}>
                  <th scope="row">{m.column}</th>
                  <td><select aria-label={t('import.goesToOf', { column: m.column })} value={m.to} onChange={(e) => change(i, { to: e.target.value as ColumnMap['to'], ...(e.target.value === 'field' && !m.field ? { field: m.column.trim().toLowerCase().replace(/\s+/g, '_'), type: 'auto' } : {}) })}>
                    <option value="email">{t('contacts.email')}</option><option value="subscribed">{t('contacts.subscribed')}</option><option value="field">{t('import.aField')}</option><option value="ignore">{t('import.ignore')}</option>
                  </select></td>
                  <td>{m.to === 'field' && (
                    <>
                      <input aria-label={t('import.fieldNameOf', { column: m.column })} defaultValue={m.field} onBlur={(e) => { if (e.target.value.trim() && e.target.value.trim() !== m.field) change(i, { field: e.target.value.trim() }) }} />
                      <span className="small muted"> {shown?.existing ? t('import.existing') : t('import.new')}</span>
                    </>
                  )}</td>
                  <td>{m.to === 'field' && (
                    <>
                      <select aria-label={t('import.readAsOf', { column: m.column })} value={m.type ?? 'auto'} onChange={(e) => change(i, { type: e.target.value })}>
                        {TYPES.map((ty) => <option key={ty} value={ty}>{t(TYPE_LABEL[ty])}</option>)}
                      </select>
                      {(shown?.misfit ?? 0) > 0 && <span className="err small"> {t('import.misfit', { count: shown?.misfit ?? 0 })}</span>}
                    </>
                  )}</td>
                  <td className="small">{p.rows[0]?.[i] ?? ''}</td>
                </tr>
              )
            })}</tbody>
          </table></div>
          <h3>{t('import.firstRows')}</h3>
          <div className="table-wrap"><table className="small">
            <thead><tr>{mapping.map((m) => <th scope="col" key={m.column}>{m.column}</th>)}</tr></thead>
            <tbody>{p.rows.map((row, ri) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: the preview's rows are a fixed list; two rows may be equal
              <tr key={ri}>{mapping.map((m, ci) => <td key={m.column}>{row[ci] ?? ''}</td>)}</tr>
            ))}</tbody>
          </table></div>
          <p role="status">{t('import.rows', { count: p.totalRows })} {p.failing === 0 ? t('import.allOk') : t('import.failing', { count: p.failing })}</p>
          {p.errors.length > 0 && <ul className="small">{p.errors.slice(0, 10).map((e) => <li key={`${e.row}-${e.message}`}>{t('import.rowError', { row: String(e.row), message: e.message })}</li>)}</ul>}
          <ErrorBox error={upload.error} />
          <div className="row">
            <button type="button" disabled={upload.isPending || preview.isPending} onClick={() => upload.mutate({ file, mapping })}>{upload.isPending ? t('import.uploading') : t('import.importN', { count: p.totalRows - p.failing })}</button>
            <button type="button" className="secondary" onClick={onClose}>{t('ui.cancel')}</button>
          </div>
        </div>
      )}
      {jobId && (
        <div className="stack">
          <ErrorBox error={job.error} />
          <label className="field">
            <span>{job.data ? t('import.progress', { state: t(job.data.status === 'queued' ? 'import.waiting' : job.data.status === 'running' ? 'import.importing' : job.data.status === 'completed' ? 'fields.done' : 'fields.failed'), processed: formatNumber(job.data.processed), total: formatNumber(job.data.total) }) : t('fields.starting')}</span>
            <progress max={100} value={job.data?.progress ?? 0} />
          </label>
          {job.data?.error && <div className="alert error" role="alert">{job.data.error}</div>}
          {r && (
            <div role="status">
              <p><strong>{formatNumber(r.created)}</strong> {t('import.created')} · <strong>{formatNumber(r.updated)}</strong> {t('import.updated')} · <strong>{formatNumber(r.skipped)}</strong> {t('import.skipped')} · <strong>{formatNumber(r.failed)}</strong> {t('import.failed')}</p>
              {r.errors.length > 0 && (
                <div className="table-wrap"><table>
                  <thead><tr><th scope="col">{t('import.row')}</th><th scope="col">{t('import.problem')}</th></tr></thead>
                  <tbody>{r.errors.map((e) => <tr key={`${e.row}-${e.message}`}><td>{e.row}</td><td>{e.message}</td></tr>)}</tbody>
                </table></div>
              )}
            </div>
          )}
          {finished && <button type="button" className="secondary" onClick={onClose}>{t('import.close')}</button>}
        </div>
      )}
    </div>
  )
}
