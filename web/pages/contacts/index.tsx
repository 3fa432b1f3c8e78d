import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useState } from 'react'
import { Link } from 'wouter'
import { type Contact, type ContactPage, get, type Project, post } from '../../api'
import { ImportContacts } from './import'
import { Badge, Empty, ErrorBox, Field, fieldError, formatDate, Loading, PageHead, Pager } from '../../components/ui'

const PAGE = 50

/** One page of the list; main.tsx starts the first one while the app is still loading the user and projects. */
export function contactsQuery(projectId: string, search: string, subscribed: string, cursor: string | null) {
  const params = new URLSearchParams({ limit: String(PAGE) })
  if (search) params.set('search', search)
  if (subscribed) params.set('subscribed', subscribed)
  // The rows come without the count (total=false): on a large project the count costs more than the page.
  if (cursor) params.set('cursor', cursor)
  else params.set('total', 'false')
  return {
    queryKey: ['contacts', projectId, search, subscribed, cursor] as const,
    queryFn: () => get<ContactPage>(`/contacts?${params}`, projectId),
  }
}

/** The count of the list, asked once the first rows are shown (a first page of one row carries it). */
export function contactsTotalQuery(projectId: string, search: string, subscribed: string) {
  const params = new URLSearchParams({ limit: '1' })
  if (search) params.set('search', search)
  if (subscribed) params.set('subscribed', subscribed)
  return {
    queryKey: ['contacts', projectId, search, subscribed, 'total'] as const,
    queryFn: () => get<ContactPage>(`/contacts?${params}`, projectId).then((r) => r.total),
  }
}

/** Keyset pages (the API's cursor): fast at any depth; the previous pages' cursors are kept for "Previous". */
export function ContactsPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const [typed, setTyped] = useState('')
  const [search, setSearch] = useState('')
  const [subscribed, setSubscribed] = useState('')
  const [cursors, setCursors] = useState<Array<string | null>>([null])
  const [adding, setAdding] = useState(false)
  const [importing, setImporting] = useState(false)
  useEffect(() => {
    const t = setTimeout(() => { setSearch(typed.trim()); setCursors([null]) }, 250)
    return () => clearTimeout(t)
  }, [typed])
  const cursor = cursors[cursors.length - 1]
  const page = useQuery({ ...contactsQuery(project.id, search, subscribed, cursor), placeholderData: keepPreviousData })
  // Asked after the rows: SQLite answers one request at a time, and the rows should not wait for the count.
  const totalQuery = useQuery({ ...contactsTotalQuery(project.id, search, subscribed), enabled: page.isSuccess && !page.isPlaceholderData })
  const total = totalQuery.data
  const create = useMutation({
    mutationFn: (body: { email: string; subscribed: boolean }) => post<Contact>('/contacts', body, project.id),
    onSuccess: async () => { setAdding(false); await qc.invalidateQueries({ queryKey: ['contacts', project.id] }) },
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    create.mutate({ email: String(f.get('email') ?? '').trim(), subscribed: f.get('subscribed') === 'on' })
  }
  const rows = page.data?.data ?? []
  return (
    <div>
      <PageHead title="Contacts">
        <button type="button" className="secondary" onClick={() => setImporting((a) => !a)} aria-expanded={importing}>Import CSV</button>
        <button type="button" onClick={() => setAdding((a) => !a)} aria-expanded={adding}>Add contact</button>
      </PageHead>
      {importing && <ImportContacts project={project} onClose={() => setImporting(false)} />}
      {adding && (
        <form className="card" onSubmit={submit} noValidate>
          <h2>New contact</h2>
          <ErrorBox error={create.error} shown={['email']} />
          <div className="row">
            <Field label="Email" name="email" type="email" required autoFocus error={fieldError(create.error, 'email')} />
            <div className="check"><input id="new-subscribed" name="subscribed" type="checkbox" defaultChecked /><label htmlFor="new-subscribed">Subscribed</label></div>
            <button type="submit" disabled={create.isPending}>Save</button>
          </div>
        </form>
      )}
      <div className="card">
        <search className="row">
          <Field label="Search by email" type="search" value={typed} onChange={(e) => setTyped(e.target.value)} placeholder="ada@" />
          <div className="field"><span><label htmlFor="sub-filter">Subscription</label></span>
            <select id="sub-filter" value={subscribed} onChange={(e) => { setSubscribed(e.target.value); setCursors([null]) }}>
              <option value="">All</option><option value="true">Subscribed</option><option value="false">Unsubscribed</option>
            </select>
          </div>
        </search>
      </div>
      <div className="card">
        {page.isPending && <Loading />}
        <ErrorBox error={page.error} />
        {page.data && rows.length === 0 && (search || subscribed
          ? <Empty title="No contact matches">Try another search or filter.</Empty>
          : <Empty title="No contacts yet">Add one above, send them with <code>POST /contacts</code>, or track an event for a new address.</Empty>)}
        {rows.length > 0 && (
          <>
            <p className="small muted" aria-live="polite">{total !== undefined ? `${total.toLocaleString()} contact${total === 1 ? '' : 's'}` : 'Counting…'}{page.isFetching && ' · loading…'}</p>
            <div className="table-wrap"><table>
              <thead><tr><th scope="col">Email</th><th scope="col">Subscription</th><th scope="col">Created</th></tr></thead>
              <tbody>{rows.map((c) => (
                <tr key={c.id}>
                  <td><Link href={`/contacts/${c.id}`}>{c.email}</Link></td>
                  <td><Badge status={c.subscribed ? 'ok' : 'failed'}>{c.subscribed ? 'Subscribed' : 'Unsubscribed'}</Badge></td>
                  <td>{formatDate(c.createdAt)}</td>
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

export { ContactDetail } from './detail'
