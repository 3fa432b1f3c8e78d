import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { Link, useSearchParams } from 'wouter'
import { call, get, type Project } from '../../api'
import { Badge, Empty, ErrorBox, formatDate, FormField, Loading, PageHead, Pager } from '../../components/ui'
import { type MessageKey, t } from '../../i18n'
import { type Campaign, type LinkStat, type RecipientsPage, REPORT_FILTERS, type ReportFilter, statusBadge } from './types'
import { formatNumber } from '../../format'

/**
 * Per-recipient report of a campaign: who was delivered, opened, clicked which link,
 * bounced, complained or unsubscribed (GET /campaigns/:id/recipients, keyset pages in send order), filtered
 * by what happened and by the link clicked, and exported as CSV (GET /campaigns/:id/recipients.csv, the same
 * filter). The filter lives in the address (`?filter=opened&link=…`), so the results page links straight to
 * "who opened" or "who clicked this link", and a filtered view can be shared.
 */

const PAGE = 50
const LABELS: Record<ReportFilter, MessageKey> = {
  all: 'report.everyone', delivered: 'report.delivered', opened: 'report.opened', clicked: 'report.clicked', bounced: 'report.bounced',
  complained: 'report.complained', unsubscribed: 'report.unsubscribed', failed: 'report.failed',
}
const isFilter = (v: string | null): v is ReportFilter => (REPORT_FILTERS as readonly string[]).includes(v ?? '')

/** The address of the report, filtered: for links from the results page. */
export function recipientsHref(id: string, filter: ReportFilter = 'all', link?: string): string {
  const q = new URLSearchParams()
  if (filter !== 'all') q.set('filter', filter)
  if (link) q.set('link', link)
  return `/campaigns/${id}/recipients${q.size ? `?${q}` : ''}`
}

export function CampaignRecipientsPage({ project, id }: { project: Project; id: string }) {
  const [params, setParams] = useSearchParams()
  const filter: ReportFilter = isFilter(params.get('filter')) ? (params.get('filter') as ReportFilter) : 'all'
  const link = params.get('link') ?? ''
  // The cursors of the pages seen, for Previous; a new filter starts again at the first page.
  const [cursors, setCursors] = useState<Array<string | null>>([null])
  const [cursorsOf, setCursorsOf] = useState(`${filter} ${link}`)
  if (cursorsOf !== `${filter} ${link}`) { setCursorsOf(`${filter} ${link}`); setCursors([null]) }
  const cursor = cursors[cursors.length - 1]
  const setFilter = (f: ReportFilter, l: string) => {
    const q = new URLSearchParams()
    if (f !== 'all') q.set('filter', f)
    if (l) q.set('link', l)
    setParams(q, { replace: true })
  }
  const query = new URLSearchParams({ filter })
  if (link) query.set('link', link)

  const c = useQuery({ queryKey: ['campaign', project.id, id], queryFn: () => get<Campaign>(`/campaigns/${id}`, project.id) })
  const links = useQuery({
    queryKey: ['campaign-links', project.id, id, 'all'],
    queryFn: () => get<{ data: LinkStat[] }>(`/campaigns/${id}/links?limit=100`, project.id),
  })
  const rows = useQuery({
    queryKey: ['campaign-recipients', project.id, id, filter, link, cursor],
    queryFn: () => get<RecipientsPage>(`/campaigns/${id}/recipients?${query}&limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, project.id),
    placeholderData: keepPreviousData,
  })
  const exportCsv = useMutation({
    mutationFn: () => call<string>('GET', `/campaigns/${id}/recipients.csv?${query}`, { project: project.id }),
    onSuccess: (csv) => {
      const url = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }))
      const a = document.createElement('a')
      a.href = url
      a.download = `campaign-${id}-${filter}${link ? '-link' : ''}.csv`
      a.click()
      setTimeout(() => URL.revokeObjectURL(url), 1000)
    },
  })
  if (c.isPending) return <Loading />
  if (c.error) return <><ErrorBox error={c.error} /><Link href="/campaigns">{t('campaign.all')}</Link></>
  const k = c.data
  const data = rows.data?.data ?? []
  const known = links.data?.data ?? []
  return (
    <div>
      <PageHead title={t('report.title', { name: k.name })}>
        <button type="button" className="secondary" onClick={() => exportCsv.mutate()} disabled={exportCsv.isPending}>
          {exportCsv.isPending ? t('ui.exporting') : t('ui.exportCsv')}
        </button>
      </PageHead>
      <p className="small muted">
        <Link href={`/campaigns/${id}`}>{t('report.back')}</Link> · <Link href={`/campaigns/${id}/stats`}>{t('report.results')}</Link> · <Badge status={statusBadge(k.status)}>{t(`campaigns.status.${k.status}`)}</Badge>
      </p>
      <ErrorBox error={exportCsv.error} />
      <div className="card">
        <search className="row">
          <fieldset className="field plain">
            <legend>{t('report.show')}</legend>
            <div className="segmented">
              {REPORT_FILTERS.map((f) => (
                <button key={f} type="button" className={filter === f ? 'small' : 'secondary small'} aria-pressed={filter === f}
                  onClick={() => setFilter(f, f === 'clicked' || f === 'all' ? link : '')}>{t(LABELS[f])}</button>
              ))}
            </div>
          </fieldset>
          <FormField label={t('report.link')} id="report-link">
            {(c) => (
              <select {...c} value={link} disabled={known.length === 0}
                onChange={(e) => setFilter(e.target.value ? 'clicked' : filter, e.target.value)}>
                <option value="">{known.length === 0 ? t('report.noLink') : t('report.anyLink')}</option>
                {known.map((l) => <option key={l.url} value={l.url}>{l.url} ({formatNumber(l.uniqueClicks)})</option>)}
                {link && !known.some((l) => l.url === link) && <option value={link}>{link}</option>}
              </select>
            )}
          </FormField>
        </search>
      </div>
      <div className="card">
        {rows.isPending && <Loading />}
        <ErrorBox error={rows.error} />
        {rows.data && data.length === 0 && (filter === 'all' && !link
          ? <Empty title={t('report.none')}>{t('report.noneText')}</Empty>
          : <Empty title={t('report.noMatch')}>{link ? t('report.noMatchLink') : t('report.noMatchText')}</Empty>)}
        {data.length > 0 && (
          <>
            <p className="small muted" aria-live="polite">
              {link ? t('report.whoClicked', { link }) : filter === 'all' ? t('report.every') : t('report.filtered', { filter: t(LABELS[filter]).toLowerCase() })}{rows.isFetching ? t('ui.loadingMore') : ''}
            </p>
            <div className="table-wrap"><table className="stacked" data-testid="recipients">
              <thead><tr>
                <th scope="col">{t('report.recipient')}</th><th scope="col">{t('campaigns.status')}</th><th scope="col">{t('report.delivered')}</th><th scope="col">{t('report.opened')}</th>
                <th scope="col">{t('report.clicked')}</th><th scope="col">{t('report.bounced')}</th><th scope="col">{t('report.unsubscribed')}</th>
              </tr></thead>
              <tbody>{data.map((r) => (
                <tr key={r.emailId}>
                  <td className="who">{r.contactId ? <Link href={`/contacts/${r.contactId}`}>{r.email}</Link> : r.email}<br />
                    <Link className="small" href={`/emails/${r.emailId}`}>{t('report.theEmail')}</Link></td>
                  <td data-label={`${t('campaigns.status')}: `}><Badge status={r.bouncedAt || r.status === 'FAILED' ? 'failed' : r.deliveredAt ? 'ok' : 'pending'}>{t(`report.email.${r.status}` as MessageKey)}</Badge></td>
                  <td data-label={`${t('report.delivered')}: `}>{formatDate(r.deliveredAt)}</td>
                  <td data-label={`${t('report.opened')}: `}>{r.openedAt ? <>{formatDate(r.openedAt)}{r.opens > 0 && <><br /><span className="small muted">{times(r.opens)}</span></>}</> : '—'}</td>
                  <td data-label={`${t('report.clicked')}: `} className="reply">
                    {r.clickedAt ? <>{formatDate(r.clickedAt)} <span className="small muted">{times(r.clicks)}</span>
                      <ul className="plain small">{r.links.map((l) => <li key={l}>{l}</li>)}</ul></> : '—'}
                  </td>
                  <td data-label={`${t('report.bounced')}: `}>{r.bouncedAt ? <>{formatDate(r.bouncedAt)}{r.bounceType && <><br /><span className="small muted">{r.bounceType}</span></>}</> : '—'}
                    {r.complainedAt && <><br /><span className="small">{t('report.complainedAt', { at: formatDate(r.complainedAt) })}</span></>}</td>
                  <td data-label={`${t('report.unsubscribed')}: `}>{formatDate(r.unsubscribedAt)}</td>
                </tr>
              ))}</tbody>
            </table></div>
            <Pager where={t('ui.page', { page: cursors.length })} hasPrev={cursors.length > 1} hasNext={Boolean(rows.data?.hasMore)} busy={rows.isFetching}
              onPrev={() => setCursors((s) => s.slice(0, -1))} onNext={() => { const n = rows.data?.cursor; if (n) setCursors((s) => [...s, n]) }} />
          </>
        )}
      </div>
    </div>
  )
}

const times = (n: number) => t('report.times', { count: n })
