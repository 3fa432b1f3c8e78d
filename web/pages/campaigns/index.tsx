import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { useEffect, useState } from 'react'
import { Link } from 'wouter'
import { get, type Project } from '../../api'
import { Badge, Empty, ErrorBox, Field, formatDate, Loading, PageHead, Pager } from '../../components/ui'
import { type CampaignList, type Segment, type Status, STATUSES, statusBadge } from './types'
import { formatNumber, formatShare } from '../../format'
import { type MessageKey, t } from '../../i18n'

const PAGE = 25
const AUDIENCE: Record<string, MessageKey> = { ALL: 'campaigns.audienceAll', SEGMENT: 'campaigns.audienceSegment', FILTERED: 'campaigns.audienceFilter' }

/** The campaigns of the project, newest first, by status and searched by name, subject or sender. */
export function CampaignsPage({ project }: { project: Project }) {
  const [typed, setTyped] = useState('')
  const [search, setSearch] = useState('')
  const [status, setStatus] = useState('')
  const [page, setPage] = useState(1)
  useEffect(() => {
    const timer = setTimeout(() => { setSearch(typed.trim()); setPage(1) }, 250)
    return () => clearTimeout(timer)
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
    if (c.audienceType !== 'SEGMENT') return AUDIENCE[c.audienceType] ? t(AUDIENCE[c.audienceType]) : c.audienceType
    const seg = segments.data?.find((x) => x.id === c.segmentId)
    if (seg) return t('campaigns.segmentNamed', { name: seg.name })
    return segments.data ? t('campaigns.deletedSegment') : t('campaigns.audienceSegment')
  }
  return (
    <div>
      <PageHead title={t('campaigns.title')}><Link className="button" href="/campaigns/new">{t('campaigns.new')}</Link></PageHead>
      <div className="card">
        <search className="row">
          <Field label={t('ui.search')} type="search" value={typed} onChange={(e) => setTyped(e.target.value)} placeholder={t('campaigns.searchPlaceholder')} />
          <fieldset className="field plain">
            <legend>{t('campaigns.status')}</legend>
            <div className="segmented">
              {['', ...STATUSES].map((s) => (
                <button key={s || 'all'} type="button" className={status === s ? 'small' : 'secondary small'} aria-pressed={status === s}
                  onClick={() => { setStatus(s); setPage(1) }}>{s ? t(`campaigns.filter.${s as Status}`) : t('ui.all')}</button>
              ))}
            </div>
          </fieldset>
        </search>
      </div>
      <div className="card">
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data && rows.length === 0 && (search || status
          ? <Empty title={t('campaigns.noMatch')}>{t('campaigns.noMatchText')}</Empty>
          : <Empty title={t('campaigns.none')}><p>{t('campaigns.noneText')}</p><Link className="button" href="/campaigns/new">{t('campaigns.new')}</Link></Empty>)}
        {rows.length > 0 && (
          <>
            <p className="small muted" aria-live="polite">{t('campaigns.count', { count: list.data?.total ?? 0 })}{list.isFetching ? t('ui.loadingMore') : ''}</p>
            <div className="table-wrap"><table>
              <thead><tr><th scope="col">{t('campaigns.name')}</th><th scope="col">{t('campaigns.status')}</th><th scope="col">{t('campaigns.audience')}</th><th scope="col">{t('campaigns.sent')}</th><th scope="col">{t('campaigns.opened')}</th><th scope="col">{t('campaigns.when')}</th></tr></thead>
              <tbody>{rows.map((c) => (
                <tr key={c.id}>
                  <td><Link href={`/campaigns/${c.id}`}>{c.name}</Link><br /><span className="small muted">{c.subject}</span></td>
                  <td><Badge status={statusBadge(c.status)}>{t(`campaigns.status.${c.status}`)}</Badge></td>
                  <td>{audience(c)}</td>
                  <td>{formatNumber(c.sentCount)}</td>
                  <td>{formatShare(c.openedCount, c.deliveredCount, 0)}</td>
                  <td>{c.status === 'SCHEDULED' ? t('campaigns.scheduledAt', { at: formatDate(c.scheduledFor) }) : c.sentAt ? t('campaigns.sentAt', { at: formatDate(c.sentAt) }) : t('campaigns.createdAt', { at: formatDate(c.createdAt) })}</td>
                </tr>
              ))}</tbody>
            </table></div>
            <Pager where={t('ui.pageOf', { page, pages: Math.max(1, list.data?.totalPages ?? 1) })} hasPrev={page > 1} hasNext={page < (list.data?.totalPages ?? 1)}
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
