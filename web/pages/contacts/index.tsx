import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useState } from 'react'
import { Link } from 'wouter'
import { call, type Contact, type ContactPage, get, type Project, post } from '../../api'
import { Badge, Empty, ErrorBox, Field, fieldError, formatDate, Loading, onField, PageHead, Pager } from '../../components/ui'
import { releaseFirstView } from '../../first-view'
import { t } from '../../i18n'
import { useFields } from '../segments'
import { type ApiTree, emptyTree, fromApi, rowPaths, toApi, type Tree, TreeEditor } from '../segments/builder'
import { BulkBar, type Target } from './bulk'
import { ImportContacts } from './import'
import { CONTACTS_PAGE_SIZE as PAGE } from '../../nav'

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

/** The filter of the page as the API takes it (POST /contacts/query, /bulk, /export). */
export interface ListFilter { search?: string; subscribed?: boolean; condition?: ApiTree }

function filterBody(search: string, subscribed: string, condition: ApiTree | null): ListFilter {
  return {
    ...(search ? { search } : {}),
    ...(subscribed ? { subscribed: subscribed === 'true' } : {}),
    ...(condition ? { condition } : {}),
  }
}

/** A page of the filtered list: the rows without the count, as GET /contacts?total=false. */
function filteredQuery(projectId: string, filter: ListFilter, cursor: string | null) {
  return {
    queryKey: ['contacts', projectId, 'query', JSON.stringify(filter), cursor] as const,
    queryFn: () => post<ContactPage>('/contacts/query', { ...filter, limit: PAGE, ...(cursor ? { cursor } : { total: false }) }, projectId),
  }
}

const columnsKey = (projectId: string) => `mailctl.contacts.columns.${projectId}`

/** The columns picked on this browser for the project (localStorage; docs/decisions.md). */
function useColumns(projectId: string): [string[], (c: string[]) => void] {
  const [cols, setCols] = useState<string[]>(() => {
    try {
      const v = JSON.parse(localStorage.getItem(columnsKey(projectId)) ?? '[]') as unknown
      return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []
    } catch { return [] }
  })
  const set = (c: string[]) => {
    setCols(c)
    try { localStorage.setItem(columnsKey(projectId), JSON.stringify(c)) } catch { /* private mode: not remembered */ }
  }
  return [cols, set]
}

function valueAt(data: Record<string, unknown> | null, path: string): string {
  let v: unknown = data
  for (const k of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined
  if (v === undefined || v === null) return ''
  return typeof v === 'object' ? JSON.stringify(v) : String(v)
}

/**
 * Keyset pages (the API's cursor): fast at any depth; the previous pages' cursors are kept for "Previous".
 * Without a search or conditions the page reads GET /contacts (the in-memory index of the emails); with
 * them, POST /contacts/query (search over the email and text fields, the segment builder's conditions).
 */
export function ContactsPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const [typed, setTyped] = useState('')
  const [search, setSearch] = useState('')
  const [subscribed, setSubscribed] = useState('')
  const [cursors, setCursors] = useState<Array<string | null>>([null])
  const [adding, setAdding] = useState(false)
  const [importing, setImporting] = useState(false)
  const [filtering, setFiltering] = useState(false)
  const [tree, setTree] = useState<Tree | null>(null)
  const [applied, setApplied] = useState<ApiTree | null>(null)
  const [selected, setSelected] = useState<Set<string>>(new Set())
  const [allMatching, setAllMatching] = useState(false)
  const [columns, setColumns] = useColumns(project.id)
  const fieldsCat = useFields(project)
  const dataFields = fieldsCat.fields.filter((f) => f.kind === 'data').map((f) => f.label)
  useEffect(() => {
    const timer = setTimeout(() => { setSearch(typed.trim()); setCursors([null]) }, 250)
    return () => clearTimeout(timer)
  }, [typed])
  // A new filter is a new list: the selection and the pages start again.
  const filterKey = JSON.stringify([search, subscribed, applied])
  const [listKey, setListKey] = useState(filterKey)
  if (listKey !== filterKey) {
    setListKey(filterKey)
    setSelected(new Set())
    setAllMatching(false)
  }
  const filter = filterBody(search, subscribed, applied)
  const filtered = Boolean(search || applied)
  const cursor = cursors[cursors.length - 1]
  const page = useQuery({ ...(filtered ? filteredQuery(project.id, filter, cursor) : contactsQuery(project.id, '', subscribed, cursor)), placeholderData: keepPreviousData })
  // Asked after the rows: SQLite answers one request at a time, and the rows should not wait for the count.
  // A filter's count may be an estimate ("about N"): on a large project the exact count of a condition or
  // a search reads every contact (docs/decisions.md, Contacts page counts).
  const countQuery: { queryKey: readonly unknown[]; queryFn: () => Promise<{ total: number; estimated: boolean }> } = filtered
    ? { queryKey: ['contacts', project.id, 'count', JSON.stringify(filter)] as const, queryFn: () => post<{ total: number; estimated: boolean }>('/contacts/query/count', { ...filter, estimate: true }, project.id) }
    : { queryKey: contactsTotalQuery(project.id, '', subscribed).queryKey, queryFn: () => contactsTotalQuery(project.id, '', subscribed).queryFn().then((n) => ({ total: n, estimated: false })) }
  const totalQuery = useQuery({ ...countQuery, enabled: page.isSuccess && !page.isPlaceholderData })
  const total = totalQuery.data?.total
  // The page drawn by the app takes the place of the server's first view of it (web/first-view.ts).
  useEffect(() => { if (!page.isPending) releaseFirstView() }, [page.isPending])
  const about = totalQuery.data?.estimated === true
  const create = useMutation({
    mutationFn: (body: { email: string; subscribed: boolean }) => post<Contact>('/contacts', body, project.id),
    onSuccess: async () => { setAdding(false); await qc.invalidateQueries({ queryKey: ['contacts', project.id] }) },
  })
  const createError = onField(create.error, 'email')
  const exportCsv = useMutation({
    mutationFn: () => call<string>('POST', '/contacts/export', { body: filter, project: project.id }),
    onSuccess: (csv) => {
      const url = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }))
      const a = document.createElement('a')
      a.href = url
      a.download = `contacts-${new Date().toISOString().slice(0, 10)}.csv`
      a.click()
      setTimeout(() => URL.revokeObjectURL(url), 1000)
    },
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    create.mutate({ email: String(f.get('email') ?? '').trim(), subscribed: f.get('subscribed') === 'on' })
  }
  const rows = page.data?.data ?? []
  const pageIds = rows.map((c) => c.id)
  const allOnPage = pageIds.length > 0 && pageIds.every((id) => selected.has(id))
  const toggle = (id: string) => { setAllMatching(false); setSelected((s) => { const n = new Set(s); if (n.has(id)) n.delete(id); else n.add(id); return n }) }
  const togglePage = () => { setAllMatching(false); setSelected((s) => { const n = new Set(s); for (const id of pageIds) { if (allOnPage) n.delete(id); else n.add(id) } return n }) }
  const target: Target | null = allMatching
    ? { kind: 'filter', filter: filter as Record<string, unknown>, count: about ? undefined : total }
    : selected.size ? { kind: 'ids', ids: [...selected] } : null
  return (
    <div>
      <PageHead title={t('contacts.title')}>
        <Link className="button secondary" href="/contacts/fields">{t('contacts.fields')}</Link>
        <button type="button" className="secondary" onClick={() => setImporting((a) => !a)} aria-expanded={importing}>{t('contacts.import')}</button>
        <button type="button" onClick={() => setAdding((a) => !a)} aria-expanded={adding}>{t('contacts.add')}</button>
      </PageHead>
      {importing && <ImportContacts project={project} onClose={() => setImporting(false)} />}
      {adding && (
        <form className="card" onSubmit={submit} noValidate>
          <h2>{t('contacts.new')}</h2>
          <ErrorBox error={createError} shown={['email']} />
          <div className="row">
            <Field label={t('contacts.email')} name="email" type="email" required autoFocus error={fieldError(createError, 'email')} />
            <div className="check"><input id="new-subscribed" name="subscribed" type="checkbox" defaultChecked /><label htmlFor="new-subscribed">{t('contacts.subscribed')}</label></div>
            <button type="submit" disabled={create.isPending}>{t('ui.save')}</button>
          </div>
        </form>
      )}
      <div className="card">
        <search className="row">
          <Field label={t('contacts.search')} type="search" value={typed} onChange={(e) => setTyped(e.target.value)} placeholder={t('contacts.searchPlaceholder')} />
          <div className="field"><span><label htmlFor="sub-filter">{t('contacts.subscription')}</label></span>
            <select id="sub-filter" value={subscribed} onChange={(e) => { setSubscribed(e.target.value); setCursors([null]) }}>
              <option value="">{t('ui.all')}</option><option value="true">{t('contacts.subscribed')}</option><option value="false">{t('contacts.unsubscribed')}</option>
            </select>
          </div>
          <button type="button" className="secondary" aria-expanded={filtering} onClick={() => { setFiltering((f) => !f); if (!tree) setTree(applied ? fromApi(applied, new Set(fieldsCat.fields.map((f) => f.field))) : emptyTree()) }}>
            {applied ? t('contacts.conditionsN', { n: applied.groups.reduce((n, g) => n + (g.filters?.length ?? 0), 0) }) : t('contacts.conditions')}
          </button>
          <ColumnPicker fields={dataFields} columns={columns} setColumns={setColumns} />
          <button type="button" className="secondary" onClick={() => exportCsv.mutate()} disabled={exportCsv.isPending}>{exportCsv.isPending ? t('ui.exporting') : t('ui.exportCsv')}</button>
        </search>
        <ErrorBox error={exportCsv.error} />
        {filtering && tree && (
          <ConditionsPanel project={project} tree={tree} setTree={setTree} fields={fieldsCat} applied={applied}
            onApply={(t) => { setApplied(t); setCursors([null]) }} onClear={() => { setApplied(null); setTree(emptyTree()); setCursors([null]) }} />
        )}
      </div>
      <div className="card">
        {page.isPending && <Loading />}
        <ErrorBox error={page.error} />
        {page.data && rows.length === 0 && (search || subscribed || applied
          ? <Empty title={t('contacts.noMatch')}>{t('contacts.noMatchText')}</Empty>
          : <Empty title={t('contacts.none')}>{t('contacts.noneText1')}<code>POST /contacts</code>{t('contacts.noneText2')}</Empty>)}
        {rows.length > 0 && (
          <>
            <p className="small muted" aria-live="polite">{total === undefined ? t('contacts.counting') : t(about ? 'contacts.countAbout' : 'contacts.count', { count: total })}{page.isFetching && t('ui.loadingMore')}</p>
            {(selected.size > 0 || allMatching) && (
              <p className="small">
                {allMatching ? t(about ? 'contacts.allSelectedAbout' : 'contacts.allSelected', { count: total ?? 0 }) : t('contacts.selected', { count: selected.size })}{' '}
                {!allMatching && total !== undefined && total > selected.size && <button type="button" className="link" onClick={() => setAllMatching(true)}>{t(about ? 'contacts.selectAllAbout' : 'contacts.selectAll', { count: total })}</button>}{' '}
                <button type="button" className="link" onClick={() => { setSelected(new Set()); setAllMatching(false) }}>{t('contacts.clearSelection')}</button>
              </p>
            )}
            {target && <BulkBar key={JSON.stringify(target.kind === 'ids' ? target.ids.length : 'all')} project={project} target={target} fields={dataFields} />}
            <div className="table-wrap"><table>
              <thead><tr>
                <th scope="col" className="pick"><input type="checkbox" aria-label={t('contacts.selectPage')} checked={allOnPage || allMatching} onChange={togglePage} /></th>
                <th scope="col">{t('contacts.email')}</th><th scope="col">{t('contacts.subscription')}</th>
                {columns.map((c) => <th scope="col" key={c}>{c}</th>)}
                <th scope="col">{t('contacts.created')}</th>
              </tr></thead>
              <tbody>{rows.map((c) => (
                <tr key={c.id}>
                  <td className="pick"><input type="checkbox" aria-label={t('contacts.selectOne', { email: c.email })} checked={allMatching || selected.has(c.id)} onChange={() => toggle(c.id)} /></td>
                  <td><Link href={`/contacts/${c.id}`}>{c.email}</Link></td>
                  <td><Badge status={c.subscribed ? 'ok' : 'failed'}>{c.subscribed ? t('contacts.subscribed') : t('contacts.unsubscribed')}</Badge></td>
                  {columns.map((k) => <td key={k}>{valueAt(c.data, k)}</td>)}
                  <td>{formatDate(c.createdAt)}</td>
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

/** The columns shown besides email, subscription and date: custom fields, remembered per project on this browser. */
function ColumnPicker({ fields, columns, setColumns }: { fields: string[]; columns: string[]; setColumns: (c: string[]) => void }) {
  const all = [...new Set([...columns, ...fields])]
  return (
    <details className="picker">
      <summary className="button secondary">{columns.length ? t('contacts.columnsN', { n: columns.length }) : t('contacts.columns')}</summary>
      <fieldset>
        <legend>{t('contacts.columnsLegend')}</legend>
        {all.length === 0 && <p className="small muted">{t('contacts.noFields')}</p>}
        {all.map((f) => (
          <label key={f} className="check">
            <input type="checkbox" checked={columns.includes(f)} onChange={(e) => setColumns(e.target.checked ? [...columns, f] : columns.filter((c) => c !== f))} /> {f}
          </label>
        ))}
      </fieldset>
    </details>
  )
}

/** The segment builder on the list: apply the conditions, or save them as a dynamic segment. */
function ConditionsPanel({ project, tree, setTree, fields, applied, onApply, onClear }: {
  project: Project; tree: Tree; setTree: (t: Tree) => void; fields: ReturnType<typeof useFields>; applied: ApiTree | null
  onApply: (t: ApiTree) => void; onClear: () => void
}) {
  const [name, setName] = useState('')
  const [check, setCheck] = useState<unknown>(null)
  const save = useMutation({
    mutationFn: () => post<{ id: string; name: string }>('/segments', { name: name.trim(), condition: toApi(tree) }, project.id),
  })
  const apply = async () => {
    // The conditions are checked (422 with their paths) before the list uses them, by the list's own query
    // for one row: a count would read every contact of a large project first.
    try {
      await post('/contacts/query', { condition: toApi(tree), limit: 1, total: false }, project.id)
      setCheck(null)
      onApply(toApi(tree))
    } catch (err) { setCheck(err) }
  }
  return (
    <div className="stack conditions">
      <ErrorBox error={fields.error} />
      {!fields.ready ? <Loading label={t('contacts.loadingFields')} /> : (
        <TreeEditor tree={tree} onChange={(next) => { setTree(next); setCheck(null) }} path="condition" label="" depth={1} ctx={{ fields: fields.fields, error: check ?? save.error }} />
      )}
      <ErrorBox error={check ?? save.error} shown={rowPaths(tree)} />
      <div className="row">
        <button type="button" onClick={apply}>{t('contacts.apply')}</button>
        {applied && <button type="button" className="secondary" onClick={onClear}>{t('contacts.clearConditions')}</button>}
        <Field label={t('contacts.segmentName')} value={name} onChange={(e) => { setName(e.target.value); save.reset() }} placeholder={t('contacts.segmentPlaceholder')} />
        <button type="button" className="secondary" disabled={!name.trim() || save.isPending} onClick={() => save.mutate()}>{t('contacts.saveSegment')}</button>
      </div>
      {save.data && <p role="status">{t('contacts.savedAs')} <Link href={`/segments/${save.data.id}`}>{save.data.name}</Link>.</p>}
    </div>
  )
}

export { ContactDetail } from './detail'
export { FieldsPage } from './fields'
