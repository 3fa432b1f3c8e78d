import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useState } from 'react'
import { Link } from 'wouter'
import { del, get, post, type Project } from '../../api'
import { Badge, ConfirmButton, Empty, ErrorBox, Field, fieldError, formatDate, Loading, PageHead, Pager } from '../../components/ui'
import type { Suppression, SuppressionPage } from './types'
import { formatNumber } from '../../format'

const PAGE = 50

const REASONS: Record<Suppression['reason'], string> = { bounce: 'Hard bounce', complaint: 'Complaint', manual: 'Added by hand' }

/** The addresses the project never sends to: search, reason filter, keyset pages, add and remove. */
export function SuppressionsPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const [typed, setTyped] = useState('')
  const [search, setSearch] = useState('')
  const [reason, setReason] = useState('')
  const [cursors, setCursors] = useState<Array<string | null>>([null])
  const [adding, setAdding] = useState(false)
  const [notice, setNotice] = useState<string | null>(null)
  useEffect(() => {
    const t = setTimeout(() => { setSearch(typed.trim()); setCursors([null]) }, 250)
    return () => clearTimeout(t)
  }, [typed])
  const cursor = cursors[cursors.length - 1]
  const params = new URLSearchParams({ limit: String(PAGE) })
  if (search) params.set('search', search)
  if (reason) params.set('reason', reason)
  if (cursor) params.set('cursor', cursor)
  const page = useQuery({
    queryKey: ['suppressions', project.id, search, reason, cursor],
    queryFn: () => get<SuppressionPage>(`/suppressions?${params}`, project.id),
    placeholderData: keepPreviousData,
  })
  const refresh = () => qc.invalidateQueries({ queryKey: ['suppressions', project.id] })
  const add = useMutation({
    mutationFn: (body: { email: string; note?: string }) => post<Suppression>('/suppressions', body, project.id),
    onSuccess: async (s) => { setAdding(false); setNotice(`${s.email} is suppressed: no mail will be sent to it.`); await refresh() },
  })
  const remove = useMutation({
    mutationFn: (email: string) => del(`/suppressions/${encodeURIComponent(email)}`, project.id),
    onSuccess: async (_, email) => { setNotice(`${email} was removed: it can be sent to again.`); await refresh() },
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    setNotice(null)
    const f = new FormData(e.currentTarget)
    const note = String(f.get('note') ?? '').trim()
    add.mutate({ email: String(f.get('email') ?? '').trim(), ...(note ? { note } : {}) })
  }
  const rows = page.data?.data ?? []
  return (
    <div>
      <PageHead title="Suppressions">
        <button type="button" onClick={() => { setAdding((a) => !a); setNotice(null) }} aria-expanded={adding}>Add address</button>
      </PageHead>
      <p className="muted">Mail is never sent to these addresses. Hard bounces and spam complaints are added automatically; <code>POST /v1/send</code> reports them as <code>suppressed</code>.</p>
      {notice && <div className="alert ok" role="status">{notice}</div>}
      {adding && (
        <form className="card" onSubmit={submit} noValidate>
          <h2>Suppress an address</h2>
          <ErrorBox error={add.error} shown={['email', 'note']} />
          <div className="row">
            <Field label="Email" name="email" type="email" required autoFocus error={fieldError(add.error, 'email')} />
            <Field label="Note (optional)" name="note" maxLength={1000} placeholder="Asked to stop by phone" error={fieldError(add.error, 'note')} />
            <button type="submit" disabled={add.isPending}>{add.isPending ? 'Saving…' : 'Suppress'}</button>
          </div>
        </form>
      )}
      <div className="card">
        <search className="row">
          <Field label="Search by address" type="search" value={typed} onChange={(e) => setTyped(e.target.value)} placeholder="@example.com" />
          <div className="field"><span><label htmlFor="reason-filter">Reason</label></span>
            <select id="reason-filter" value={reason} onChange={(e) => { setReason(e.target.value); setCursors([null]) }}>
              <option value="">All reasons</option>
              {Object.entries(REASONS).map(([k, v]) => <option key={k} value={k}>{v}</option>)}
            </select>
          </div>
        </search>
      </div>
      <div className="card">
        {page.isPending && <Loading />}
        <ErrorBox error={page.error ?? remove.error} />
        {page.data && rows.length === 0 && (search || reason
          ? <Empty title="No suppressed address matches">Try another search or reason.</Empty>
          : <Empty title="No suppressed addresses">Nothing has bounced or complained yet. Use “Add address” for someone who asked not to be mailed.</Empty>)}
        {rows.length > 0 && (
          <>
            <p className="small muted" aria-live="polite">{cursor === null && page.data ? `${formatNumber(page.data.total)} address${page.data.total === 1 ? '' : 'es'}` : ''}{page.isFetching && ' · loading…'}</p>
            <div className="table-wrap"><table className="stacked">
              <thead><tr><th scope="col">Address</th><th scope="col">Reason</th><th scope="col">Detail</th><th scope="col">Since</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
              <tbody>{rows.map((s) => (
                <tr key={s.email}>
                  <td>{s.email}</td>
                  <td><Badge status={s.reason === 'manual' ? '' : 'failed'}>{REASONS[s.reason] ?? s.reason}</Badge></td>
                  <td className="value">{s.detail ? <code>{s.detail}</code> : '—'}{s.emailId && <div className="small"><Link href={`/emails/${s.emailId}`}>The email that caused it</Link></div>}</td>
                  <td>{formatDate(s.createdAt)}</td>
                  <td><ConfirmButton label="Remove" confirm={`Send to ${s.email} again?`} onConfirm={() => remove.mutate(s.email)} busy={remove.isPending && remove.variables === s.email} /></td>
                </tr>
              ))}</tbody>
            </table></div>
            <Pager where={`Page ${cursors.length}`} hasPrev={cursors.length > 1} hasNext={!!page.data?.hasMore} busy={page.isFetching}
              onPrev={() => setCursors((c) => c.slice(0, -1))} onNext={() => { const next = page.data?.cursor; if (next) setCursors((c) => [...c, next]) }} />
          </>
        )}
      </div>
    </div>
  )
}
