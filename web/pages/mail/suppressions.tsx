import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useState } from 'react'
import { Link } from 'wouter'
import { del, get, post, type Project } from '../../api'
import { Badge, ConfirmButton, Empty, ErrorBox, Field, fieldError, formatDate, FormField, Loading, PageHead, Pager } from '../../components/ui'
import { t } from '../../i18n'
import type { Suppression, SuppressionPage } from './types'

const PAGE = 50

const REASONS = ['bounce', 'complaint', 'manual'] as const
const reasonLabel = (r: string) => ((REASONS as readonly string[]).includes(r) ? t(`sup.reason.${r as Suppression['reason']}`) : r)

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
    const timer = setTimeout(() => { setSearch(typed.trim()); setCursors([null]) }, 250)
    return () => clearTimeout(timer)
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
    onSuccess: async (s) => { setAdding(false); setNotice(t('sup.added', { email: s.email })); await refresh() },
  })
  const remove = useMutation({
    mutationFn: (email: string) => del(`/suppressions/${encodeURIComponent(email)}`, project.id),
    onSuccess: async (_, email) => { setNotice(t('sup.removed', { email })); await refresh() },
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
      <PageHead title={t('nav.suppressions')}>
        <button type="button" onClick={() => { setAdding((a) => !a); setNotice(null) }} aria-expanded={adding}>{t('sup.add')}</button>
      </PageHead>
      <p className="muted">{t('sup.intro1')}<code>POST /v1/send</code>{t('sup.intro2')}<code>suppressed</code>.</p>
      {notice && <div className="alert ok" role="status">{notice}</div>}
      {adding && (
        <form className="card" onSubmit={submit} noValidate>
          <h2>{t('sup.addTitle')}</h2>
          <ErrorBox error={add.error} shown={['email', 'note']} />
          <div className="row">
            <Field label={t('sup.email')} name="email" type="email" required autoFocus error={fieldError(add.error, 'email')} />
            <Field label={t('sup.note')} name="note" maxLength={1000} placeholder={t('sup.notePlaceholder')} error={fieldError(add.error, 'note')} />
            <button type="submit" disabled={add.isPending}>{add.isPending ? t('ui.saving') : t('sup.suppress')}</button>
          </div>
        </form>
      )}
      <div className="card">
        <search className="row">
          <Field label={t('sup.search')} type="search" value={typed} onChange={(e) => setTyped(e.target.value)} placeholder="@example.com" />
          <FormField label={t('sup.reason')} id="reason-filter">
            {(c) => (
              <select {...c} value={reason} onChange={(e) => { setReason(e.target.value); setCursors([null]) }}>
                <option value="">{t('sup.allReasons')}</option>
                {REASONS.map((k) => <option key={k} value={k}>{reasonLabel(k)}</option>)}
              </select>
            )}
          </FormField>
        </search>
      </div>
      <div className="card">
        {page.isPending && <Loading />}
        <ErrorBox error={page.error ?? remove.error} />
        {page.data && rows.length === 0 && (search || reason
          ? <Empty title={t('sup.noMatch')}>{t('sup.noMatchText')}</Empty>
          : <Empty title={t('sup.none')}>{t('sup.noneText')}</Empty>)}
        {rows.length > 0 && (
          <>
            <p className="small muted" aria-live="polite">{cursor === null && page.data ? t('sup.count', { count: page.data.total }) : ''}{page.isFetching && t('ui.loadingMore')}</p>
            <div className="table-wrap"><table className="stacked">
              <thead><tr><th scope="col">{t('sup.address')}</th><th scope="col">{t('sup.reason')}</th><th scope="col">{t('sup.detail')}</th><th scope="col">{t('sup.since')}</th><th scope="col"><span className="sr-only">{t('sup.actions')}</span></th></tr></thead>
              <tbody>{rows.map((s) => (
                <tr key={s.email}>
                  <td>{s.email}</td>
                  <td><Badge status={s.reason === 'manual' ? '' : 'failed'}>{reasonLabel(s.reason)}</Badge></td>
                  <td className="value">{s.detail ? <code>{s.detail}</code> : '—'}{s.emailId && <div className="small"><Link href={`/emails/${s.emailId}`}>{t('sup.cause')}</Link></div>}</td>
                  <td>{formatDate(s.createdAt)}</td>
                  <td><ConfirmButton label={t('sup.remove')} confirm={t('sup.removeConfirm', { email: s.email })} onConfirm={() => remove.mutate(s.email)} busy={remove.isPending && remove.variables === s.email} /></td>
                </tr>
              ))}</tbody>
            </table></div>
            <Pager where={t('ui.page', { page: cursors.length })} hasPrev={cursors.length > 1} hasNext={!!page.data?.hasMore} busy={page.isFetching}
              onPrev={() => setCursors((c) => c.slice(0, -1))} onNext={() => { const next = page.data?.cursor; if (next) setCursors((c) => [...c, next]) }} />
          </>
        )}
      </div>
    </div>
  )
}
