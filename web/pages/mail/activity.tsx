import { keepPreviousData, useInfiniteQuery, useQuery } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useSearch } from 'wouter'
import { get, type Project } from '../../api'
import { Badge, Empty, ErrorBox, Field, fieldError, formatDate, FormField, Loading, PageHead } from '../../components/ui'
import { t } from '../../i18n'
import { type ActivityItem, type ActivityPage as FeedPage, type ActivityTypes, statusTone, statusLabel, typeLabel } from './types'
import { formatNumber } from '../../format'

const PAGE = 25

interface Filters { type: string; contact: string; campaignId: string; from: string; to: string }
interface CampaignList { data: Array<{ id: string; name: string }> }

/** A date field's day (local) as the instant it starts; `end`: the instant the next day starts. */
function dayToIso(day: string, end = false): string | undefined {
  if (!day) return undefined
  const d = new Date(`${day}T00:00:00`)
  if (Number.isNaN(d.getTime())) return undefined
  if (end) d.setDate(d.getDate() + 1)
  return d.toISOString()
}

function params(f: Filters, cursor: string | null): URLSearchParams {
  const p = new URLSearchParams({ limit: String(PAGE) })
  if (f.type) p.set('type', f.type)
  if (f.contact) p.set('contact', f.contact)
  if (f.campaignId) p.set('campaignId', f.campaignId)
  const from = dayToIso(f.from)
  const to = dayToIso(f.to, true)
  if (from) p.set('from', from)
  if (to) p.set('to', to)
  if (cursor) p.set('cursor', cursor)
  return p
}

/** The feed of GET /activity, newest first, with its filters; "Load more" follows the cursor. */
export function ActivityPage({ project }: { project: Project }) {
  const search = new URLSearchParams(useSearch())
  const initial: Filters = { type: search.get('type') ?? '', contact: search.get('contact') ?? '', campaignId: search.get('campaignId') ?? '', from: '', to: '' }
  const [filters, setFilters] = useState<Filters>(initial)
  const [contactTyped, setContactTyped] = useState(initial.contact)
  const types = useQuery({ queryKey: ['activity-types', project.id], queryFn: () => get<ActivityTypes>('/activity/types', project.id) })
  const campaigns = useQuery({ queryKey: ['campaign-names', project.id], queryFn: () => get<CampaignList>('/campaigns?pageSize=100&sort=name&dir=asc', project.id), retry: false })
  const feed = useInfiniteQuery({
    queryKey: ['activity', project.id, filters],
    queryFn: ({ pageParam }) => get<FeedPage>(`/activity?${params(filters, pageParam)}`, project.id),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => (last.hasMore ? last.cursor : undefined),
    placeholderData: keepPreviousData,
  })
  const set = (patch: Partial<Filters>) => setFilters((f) => ({ ...f, ...patch }))
  const applyContact = (e: FormEvent) => { e.preventDefault(); set({ contact: contactTyped.trim() }) }
  const filtered = Object.values(filters).some(Boolean)
  const items = feed.data?.pages.flatMap((p) => p.data) ?? []
  const total = feed.data?.pages[0]?.total
  return (
    <div>
      <PageHead title={t('nav.activity')} />
      <form className="card" onSubmit={applyContact} aria-label={t('act.filters')}>
        <div className="row" style={{ alignItems: 'flex-start', marginBottom: '.85rem' }}>
          <FormField label={t('act.type')} id="f-type">
            {(c) => (
              <select {...c} value={filters.type} onChange={(e) => set({ type: e.target.value })}>
                <option value="">{t('act.allTypes')}</option>
                {types.data?.data.map((x) => <option key={x.type} value={x.type}>{typeLabel(x.type)} ({formatNumber(x.count)})</option>)}
                {filters.type && !types.data?.data.some((x) => x.type === filters.type) && <option value={filters.type}>{typeLabel(filters.type)}</option>}
              </select>
            )}
          </FormField>
          <FormField label={t('act.campaign')} id="f-campaign">
            {(c) => (
              <select {...c} value={filters.campaignId} onChange={(e) => set({ campaignId: e.target.value })}>
                <option value="">{t('act.allMail')}</option>
                {campaigns.data?.data.map((x) => <option key={x.id} value={x.id}>{x.name}</option>)}
              </select>
            )}
          </FormField>
          <Field label={t('act.fromDay')} type="date" value={filters.from} onChange={(e) => set({ from: e.target.value })} error={fieldError(feed.error, 'from')} />
          <Field label={t('act.toDay')} type="date" value={filters.to} min={filters.from || undefined} onChange={(e) => set({ to: e.target.value })} error={fieldError(feed.error, 'to')} />
        </div>
        <div className="row">
          <Field label={t('act.contact')} value={contactTyped} placeholder="ada@example.com"
            onChange={(e) => setContactTyped(e.target.value)} onBlur={() => set({ contact: contactTyped.trim() })} error={fieldError(feed.error, 'contact')} />
          <button type="submit" className="secondary">{t('act.apply')}</button>
          {filtered && <button type="button" className="secondary" onClick={() => { setFilters({ type: '', contact: '', campaignId: '', from: '', to: '' }); setContactTyped('') }}>{t('act.clear')}</button>}
        </div>
      </form>
      <div className="card">
        {feed.isPending && <Loading />}
        <ErrorBox error={feed.error} shown={['from', 'to', 'contact']} />
        {feed.data && items.length === 0 && (filtered
          ? <Empty title={t('act.noMatch')}>{t('act.noMatchText')}</Empty>
          : <Empty title={t('act.none')}>{t('act.noneText1')}<Link href="/tools">{t('nav.tools')}</Link>{t('act.noneText2')}<code>POST /v1/send</code>{t('act.noneText3')}</Empty>)}
        {items.length > 0 && (
          <>
            <p className="small muted" aria-live="polite">{total !== undefined && t('act.items', { count: total })}{feed.isFetching && t('ui.loadingMore')}</p>
            <div className="table-wrap"><table className="stacked">
              <thead><tr><th scope="col">{t('act.when')}</th><th scope="col">{t('act.what')}</th><th scope="col">{t('act.details')}</th><th scope="col">{t('act.contactCol')}</th></tr></thead>
              <tbody>{items.map((i) => <FeedRow key={`${i.kind}-${i.id}`} item={i} />)}</tbody>
            </table></div>
            <div className="pager">
              {feed.hasNextPage
                ? <button type="button" className="secondary" disabled={feed.isFetchingNextPage} onClick={() => feed.fetchNextPage()}>{feed.isFetchingNextPage ? t('ui.loading') : t('act.loadMore')}</button>
                : <span className="small muted">{t('act.end')}</span>}
            </div>
          </>
        )}
      </div>
    </div>
  )
}

function FeedRow({ item }: { item: ActivityItem }) {
  if (item.kind === 'email') {
    return (
      <tr>
        <td>{formatDate(item.createdAt)}</td>
        <td><span className="badge">{typeLabel('email')}</span></td>
        <td>
          <Link href={`/emails/${item.id}`}>{item.subject || t('act.noSubject')}</Link>{' '}
          <Badge status={statusTone(item.status)}>{statusLabel(item.status)}</Badge>
          <div className="small muted">{t('act.toFrom', { to: item.to, from: item.from })}{item.opens ? t('act.opens', { count: item.opens }) : ''}{item.clicks ? t('act.clicks', { count: item.clicks }) : ''}</div>
        </td>
        <td>{item.contactId ? <Link href={`/contacts/${item.contactId}`}>{item.to}</Link> : item.to}</td>
      </tr>
    )
  }
  const d = item.data
  const text = (k: string) => (typeof d[k] === 'string' ? (d[k] as string) : '')
  const detail = item.type === 'email.click' ? text('link')
    : item.type === 'email.bounce' ? [text('bounceType') && t('act.bounce', { type: text('bounceType') }), text('reply')].filter(Boolean).join(': ')
    : item.type === 'email.received' ? t('act.from', { from: text('from'), snippet: text('snippet') })
    : ''
  const bad = item.type === 'email.bounce' || item.type === 'email.complaint' || item.type === 'contact.unsubscribed'
  return (
    <tr>
      <td>{formatDate(item.createdAt)}</td>
      <td><Badge status={bad ? 'failed' : item.type === 'email.delivery' ? 'ok' : ''}>{typeLabel(item.type)}</Badge></td>
      <td className="value">
        {item.emailId ? <Link href={`/emails/${item.emailId}`}>{text('subject') || t('act.theEmail')}</Link> : text('subject')}
        {detail && <div className="small muted">{detail}</div>}
      </td>
      <td>{item.contact ? <Link href={`/contacts/${item.contact.id}`}>{item.contact.email}</Link> : '—'}</td>
    </tr>
  )
}
