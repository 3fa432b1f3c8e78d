import { useQuery } from '@tanstack/react-query'
import { useMemo } from 'react'
import { Link } from 'wouter'
import { get, type Project } from '../../api'
import { type Series, TimeChart } from '../../components/chart'
import { Badge, Empty, ErrorBox, Loading, PageHead } from '../../components/ui'
import { recipientsHref } from './recipients'
import { localZone } from './schedule'
import { type Campaign, type CampaignStats, type LinkStat, type ReportFilter, statusBadge, type Timeseries } from './types'
import { formatNumber, formatShare } from '../../format'
import { type MessageKey, t } from '../../i18n'

/**
 * A campaign's results: delivered, opened, clicked, bounced, complained and unsubscribed as counts and
 * rates (GET /campaigns/:id/stats, the counters kept as events happen), over time (GET
 * /analytics/timeseries?campaignId=, in the viewer's time zone) and the top links (GET /campaigns/:id/links).
 */

const pct = (a: number, b: number) => formatShare(a, b)

export function useCampaignStats(project: Project, id: string, every: number | false) {
  return useQuery({
    queryKey: ['campaign-stats', project.id, id],
    queryFn: () => get<CampaignStats>(`/campaigns/${id}/stats`, project.id),
    refetchInterval: every,
    staleTime: 0,
  })
}

export function CampaignStatsPage({ project, id }: { project: Project; id: string }) {
  const c = useQuery({ queryKey: ['campaign', project.id, id], queryFn: () => get<Campaign>(`/campaigns/${id}`, project.id) })
  if (c.isPending) return <Loading />
  if (c.error) return <><ErrorBox error={c.error} /><Link href="/campaigns">{t('campaign.all')}</Link></>
  return (
    <div>
      <PageHead title={t('stats.title', { name: c.data.name })} />
      <p className="small muted"><Link href={`/campaigns/${id}`}>{t('report.back')}</Link> · <Badge status={statusBadge(c.data.status)}>{t(`campaigns.status.${c.data.status}`)}</Badge></p>
      <CampaignResults project={project} campaign={c.data} />
    </div>
  )
}

export function CampaignResults({ project, campaign }: { project: Project; campaign: Campaign }) {
  const stats = useCampaignStats(project, campaign.id, 5_000)
  const s = stats.data
  if (campaign.status === 'DRAFT' || campaign.status === 'SCHEDULED') {
    return <div className="card"><Empty title={t('stats.notSent')}>{t('stats.notSentText')}</Empty></div>
  }
  return (
    <>
      <section className="card" aria-labelledby="results-h">
        <div className="head"><h2 id="results-h">{t('report.results')}</h2><Link className="button secondary" href={recipientsHref(campaign.id)}>{t('stats.recipients')}</Link></div>
        <ErrorBox error={stats.error} />
        {!s && stats.isPending && <Loading />}
        {s && (
          <>
            <p className="small muted">
              {t('stats.queued', { n: formatNumber(s.queued) })}{s.pending > 0 ? t('stats.pending', { n: formatNumber(s.pending) }) : ''}
              {' · '}{t('stats.skipped', { unsubscribed: formatNumber(s.skippedUnsubscribed), suppressed: formatNumber(s.skippedSuppressed) })}
              {s.failed > 0 ? ` · ${t('stats.failed', { n: formatNumber(s.failed) })}` : ''}
            </p>
            <dl className="tiles">
              <Tile id={campaign.id} filter="delivered" label={t('report.delivered')} value={s.delivered} rate={pct(s.delivered, s.queued)} of={t('stats.ofSent')} />
              <Tile id={campaign.id} filter="opened" label={t('report.opened')} value={s.opened} rate={pct(s.opened, s.delivered)} of={t('stats.ofDelivered')} />
              <Tile id={campaign.id} filter="clicked" label={t('report.clicked')} value={s.clicked} rate={pct(s.clicked, s.delivered)} of={t('stats.ofDelivered')} />
              <Tile id={campaign.id} filter="bounced" label={t('report.bounced')} value={s.bounced} rate={pct(s.bounced, s.queued)} of={t('stats.ofSent')} />
              <Tile id={campaign.id} filter="complained" label={t('report.complained')} value={s.complained} rate={pct(s.complained, s.delivered)} of={t('stats.ofDelivered')} />
              <Tile id={campaign.id} filter="unsubscribed" label={t('report.unsubscribed')} value={s.unsubscribed} rate={pct(s.unsubscribed, s.delivered)} of={t('stats.ofDelivered')} />
            </dl>
          </>
        )}
      </section>
      <OverTime project={project} campaign={campaign} />
      <TopLinks project={project} id={campaign.id} />
    </>
  )
}

function Tile({ id, filter, label, value, rate, of }: { id: string; filter: ReportFilter; label: string; value: number; rate: string; of: string }) {
  return (
    <div className="tile" data-testid={`tile-${filter}`}>
      <dt><Link href={recipientsHref(id, filter)}>{label}</Link></dt>
      <dd><strong>{formatNumber(value)}</strong> <span className="muted small">{rate} {of}</span></dd>
    </div>
  )
}

const HOUR = 3_600_000

/** Hours for a campaign of the last few days, else days (the API takes at most 31 days by hour, 400 by day). */
function rangeOf(c: Campaign): { from: string; interval: 'hour' | 'day' } {
  // No email of the campaign is older than the campaign.
  const since = new Date(c.createdAt).getTime()
  // At least the last 12 hours, so that a campaign of this hour is a line and not one lone point.
  if (Date.now() - since <= 3 * 24 * HOUR) return { from: new Date(Math.floor(Math.min(since, Date.now() - 12 * HOUR) / HOUR) * HOUR).toISOString(), interval: 'hour' }
  return { from: new Date(Math.max(since, Date.now() - 399 * 24 * HOUR)).toISOString(), interval: 'day' }
}

const COUNT_SERIES: Array<{ key: 'delivered' | 'uniqueOpened' | 'uniqueClicked' | 'bounced' | 'complained' | 'unsubscribed'; label: MessageKey; color: string }> = [
  { key: 'delivered', label: 'report.delivered', color: '#2952cc' },
  { key: 'uniqueOpened', label: 'report.opened', color: '#067647' },
  { key: 'uniqueClicked', label: 'report.clicked', color: '#7a4a00' },
  { key: 'bounced', label: 'report.bounced', color: '#b42318' },
  { key: 'complained', label: 'report.complained', color: '#9e2a9b' },
  { key: 'unsubscribed', label: 'report.unsubscribed', color: '#5b6475' },
]

function OverTime({ project, campaign }: { project: Project; campaign: Campaign }) {
  const zone = localZone()
  const { from, interval } = rangeOf(campaign)
  const ts = useQuery({
    queryKey: ['campaign-timeseries', project.id, campaign.id, from, interval, zone],
    queryFn: () => get<Timeseries>(`/analytics/timeseries?${new URLSearchParams({ campaignId: campaign.id, from, interval, timezone: zone })}`, project.id),
    refetchInterval: 15_000,
  })
  const chart = useMemo(() => {
    const data = ts.data?.data ?? []
    const x = data.map((p) => Math.floor(new Date(p.start).getTime() / 1000))
    const counts: Series[] = COUNT_SERIES.map((s) => ({ label: t(s.label), color: s.color, values: data.map((p) => p[s.key]) }))
    // Rates as they stood at the end of each bucket: what was opened, clicked or bounced so far over what was delivered or sent so far.
    let sent = 0, delivered = 0, opened = 0, clicked = 0, bounced = 0
    const open: Array<number | null> = [], click: Array<number | null> = [], bounce: Array<number | null> = []
    for (const p of data) {
      sent += p.sent; delivered += p.delivered; opened += p.uniqueOpened; clicked += p.uniqueClicked; bounced += p.bounced
      open.push(delivered ? Math.round((opened / delivered) * 1000) / 10 : null)
      click.push(delivered ? Math.round((clicked / delivered) * 1000) / 10 : null)
      bounce.push(sent ? Math.round((bounced / sent) * 1000) / 10 : null)
    }
    const rates: Series[] = [
      { label: t('stats.openRate'), color: '#067647', values: open },
      { label: t('stats.clickRate'), color: '#7a4a00', values: click },
      { label: t('stats.bounceRate'), color: '#b42318', values: bounce },
    ]
    return { x, counts, rates }
  }, [ts.data])
  return (
    <section className="card" aria-labelledby="time-h">
      <h2 id="time-h">{t('stats.overTime')}</h2>
      <p className="small muted">{t(interval === 'hour' ? 'stats.perHourZone' : 'stats.perDayZone', { zone })}</p>
      <ErrorBox error={ts.error} />
      {ts.isPending && <Loading />}
      {ts.data && (
        <div className="charts">
          <div>
            <h3>{t(interval === 'hour' ? 'stats.countsHour' : 'stats.countsDay')}</h3>
            <TimeChart x={chart.x} series={chart.counts} label={t(interval === 'hour' ? 'stats.countsLabelHour' : 'stats.countsLabelDay')} empty={t('stats.nothingDelivered')} />
          </div>
          <div>
            <h3>{t('stats.ratesSoFar')}</h3>
            <TimeChart x={chart.x} series={chart.rates} label={t('stats.ratesLabel')} empty={t('stats.noRate')} />
          </div>
        </div>
      )}
    </section>
  )
}

function TopLinks({ project, id }: { project: Project; id: string }) {
  const links = useQuery({ queryKey: ['campaign-links', project.id, id], queryFn: () => get<{ data: LinkStat[] }>(`/campaigns/${id}/links?limit=10`, project.id), refetchInterval: 15_000 })
  return (
    <section className="card" aria-labelledby="links-h">
      <h2 id="links-h">{t('stats.topLinks')}</h2>
      <ErrorBox error={links.error} />
      {links.isPending && <Loading />}
      {links.data?.data.length === 0 && <Empty title={t('stats.noClicks')}>{t('stats.noClicksText')}</Empty>}
      {links.data && links.data.data.length > 0 && (
        <div className="table-wrap"><table>
          <thead><tr><th scope="col">{t('stats.link')}</th><th scope="col">{t('stats.clicks')}</th><th scope="col">{t('stats.uniqueClicks')}</th><th scope="col"><span className="sr-only">{t('stats.recipients')}</span></th></tr></thead>
          <tbody>{links.data.data.map((l) => (
            <tr key={l.url}><td className="value"><a href={l.url} target="_blank" rel="noreferrer noopener">{l.url}</a></td><td>{formatNumber(l.clicks)}</td><td>{formatNumber(l.uniqueClicks)}</td><td><Link href={recipientsHref(id, 'clicked', l.url)}>{t('stats.whoClicked')}</Link></td></tr>
          ))}</tbody>
        </table></div>
      )}
    </section>
  )
}
