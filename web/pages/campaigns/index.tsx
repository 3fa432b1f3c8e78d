import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { useEffect, useState } from 'react'
import { Link } from 'wouter'
import { get, type Project } from '../../api'
import { Badge, Empty, ErrorBox, Field, formatDate, Loading, PageHead, Pager } from '../../components/ui'
import { type CampaignList, type Segment, STATUSES, statusBadge } from './types'

const PAGE = 25
const AUDIENCE: Record<string, string> = { ALL: 'Every contact', SEGMENT: 'A segment', FILTERED: 'A filter' }

/** The campaigns of the project, newest first, by status and searched by name, subject or sender. */
export function CampaignsPage({ project }: { project: Project }) {
  const [typed, setTyped] = useState('')
  const [search, setSearch] = useState('')
  const [status, setStatus] = useState('')
  const [page, setPage] = useState(1)
  useEffect(() => {
    const t = setTimeout(() => { setSearch(typed.trim()); setPage(1) }, 250)
    return () => clearTimeout(t)
  }, [typed])
  const params = new URLSearchParams({ page: String(page), pageSize: String(PAGE) })
  if (status) params.set('status', status)
  if (search) params.set('search', search)
  const list = useQuery({
    queryKey: ['campaigns', project.id, status, search, page],
    queryFn: () => get<CampaignList>(`/campaigns?${params}`, project.id),
    placeholderData: keepPreviousData,
    // A list with a campaign on its way keeps its counts current.
    refetchInterval: (q) => (q.state.data?.data.some((c) => c.status === 'SENDING') ? 3_000 : false),
  })
  const rows = list.data?.data ?? []
  // The segment's name in the audience column, asked only when a row has a segment.
  const segments = useQuery({
    queryKey: ['segments', project.id], queryFn: () => get<Segment[]>('/segments', project.id),
    enabled: rows.some((c) => c.audienceType === 'SEGMENT'),
  })
  const audience = (c: (typeof rows)[number]) => {
    if (c.audienceType !== 'SEGMENT') return AUDIENCE[c.audienceType] ?? c.audienceType
    const seg = segments.data?.find((x) => x.id === c.segmentId)
    if (seg) return `Segment: ${seg.name}`
    return segments.data ? 'A deleted segment' : 'A segment'
  }
  return (
    <div>
      <PageHead title="Campaigns"><Link className="button" href="/campaigns/new">New campaign</Link></PageHead>
      <div className="card">
        <search className="row">
          <Field label="Search" type="search" value={typed} onChange={(e) => setTyped(e.target.value)} placeholder="Name, subject or sender" />
          <fieldset className="field plain">
            <legend>Status</legend>
            <div className="segmented">
              {['', ...STATUSES].map((s) => (
                <button key={s || 'all'} type="button" className={status === s ? 'small' : 'secondary small'} aria-pressed={status === s}
                  onClick={() => { setStatus(s); setPage(1) }}>{s ? s.charAt(0) + s.slice(1).toLowerCase() : 'All'}</button>
              ))}
            </div>
          </fieldset>
        </search>
      </div>
      <div className="card">
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data && rows.length === 0 && (search || status
          ? <Empty title="No campaign matches">Try another search or status.</Empty>
          : <Empty title="No campaigns yet"><p>Write one, pick its audience and send it now or later.</p><Link className="button" href="/campaigns/new">New campaign</Link></Empty>)}
        {rows.length > 0 && (
          <>
            <p className="small muted" aria-live="polite">{list.data?.total.toLocaleString()} campaign{list.data?.total === 1 ? '' : 's'}{list.isFetching ? ' · loading…' : ''}</p>
            <div className="table-wrap"><table>
              <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Audience</th><th scope="col">Sent</th><th scope="col">Opened</th><th scope="col">When</th></tr></thead>
              <tbody>{rows.map((c) => (
                <tr key={c.id}>
                  <td><Link href={`/campaigns/${c.id}`}>{c.name}</Link><br /><span className="small muted">{c.subject}</span></td>
                  <td><Badge status={statusBadge(c.status)}>{c.status}</Badge></td>
                  <td>{audience(c)}</td>
                  <td>{c.sentCount.toLocaleString()}</td>
                  <td>{c.deliveredCount > 0 ? `${Math.round((c.openedCount / c.deliveredCount) * 100)}%` : '—'}</td>
                  <td>{c.status === 'SCHEDULED' ? `Scheduled ${formatDate(c.scheduledFor)}` : c.sentAt ? `Sent ${formatDate(c.sentAt)}` : `Created ${formatDate(c.createdAt)}`}</td>
                </tr>
              ))}</tbody>
            </table></div>
            <Pager where={`Page ${page} of ${Math.max(1, list.data?.totalPages ?? 1)}`} hasPrev={page > 1} hasNext={page < (list.data?.totalPages ?? 1)}
              onPrev={() => setPage((p) => p - 1)} onNext={() => setPage((p) => p + 1)} />
          </>
        )}
      </div>
    </div>
  )
}

export { CampaignPage } from './detail'
export { NewCampaign } from './compose'
export { CampaignStatsPage } from './stats'
export { CampaignRecipientsPage } from './recipients'
