import { useQuery } from '@tanstack/react-query'
import { useMemo } from 'react'
import { Link } from 'wouter'
import { get, type Project } from '../../api'
import { type Series, TimeChart } from '../../components/chart'
import { Badge, Empty, ErrorBox, Loading, PageHead } from '../../components/ui'
import { recipientsHref } from './recipients'
import { localZone } from './schedule'
import { type Campaign, type CampaignStats, type LinkStat, type ReportFilter, statusBadge, type Timeseries } from './types'

/**
 * A campaign's results: delivered, opened, clicked, bounced, complained and unsubscribed as counts and
 * rates (GET /campaigns/:id/stats, the counters kept as events happen), over time (GET
 * /analytics/timeseries?campaignId=, in the viewer's time zone) and the top links (GET /campaigns/:id/links).
 */

const pct = (a: number, b: number) => (b > 0 ? `${(Math.round((a / b) * 1000) / 10).toLocaleString()}%` : '—')

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
  if (c.error) return <><ErrorBox error={c.error} /><Link href="/campaigns">All campaigns</Link></>
  return (
    <div>
      <PageHead title={`${c.data.name}: results`} />
      <p className="small muted"><Link href={`/campaigns/${id}`}>← The campaign</Link> · <Badge status={statusBadge(c.data.status)}>{c.data.status}</Badge></p>
      <CampaignResults project={project} campaign={c.data} />
    </div>
  )
}

export function CampaignResults({ project, campaign }: { project: Project; campaign: Campaign }) {
  const stats = useCampaignStats(project, campaign.id, 5_000)
  const s = stats.data
  if (campaign.status === 'DRAFT' || campaign.status === 'SCHEDULED') {
    return <div className="card"><Empty title="Not sent yet">Results appear here once the campaign is sending.</Empty></div>
  }
  return (
    <>
      <section className="card" aria-labelledby="results-h">
        <div className="head"><h2 id="results-h">Results</h2><Link className="button secondary" href={recipientsHref(campaign.id)}>Recipients</Link></div>
        <ErrorBox error={stats.error} />
        {!s && stats.isPending && <Loading />}
        {s && (
          <>
            <p className="small muted">
              {s.queued.toLocaleString()} sent to the outbound queue{s.pending > 0 ? `, ${s.pending.toLocaleString()} still on their way` : ''}
              {' · '}{s.skippedUnsubscribed.toLocaleString()} skipped as unsubscribed, {s.skippedSuppressed.toLocaleString()} as suppressed
              {s.failed > 0 ? ` · ${s.failed.toLocaleString()} failed` : ''}
            </p>
            <dl className="tiles">
              <Tile id={campaign.id} filter="delivered" label="Delivered" value={s.delivered} rate={pct(s.delivered, s.queued)} of="of sent" />
              <Tile id={campaign.id} filter="opened" label="Opened" value={s.opened} rate={pct(s.opened, s.delivered)} of="of delivered" />
              <Tile id={campaign.id} filter="clicked" label="Clicked" value={s.clicked} rate={pct(s.clicked, s.delivered)} of="of delivered" />
              <Tile id={campaign.id} filter="bounced" label="Bounced" value={s.bounced} rate={pct(s.bounced, s.queued)} of="of sent" />
              <Tile id={campaign.id} filter="complained" label="Complained" value={s.complained} rate={pct(s.complained, s.delivered)} of="of delivered" />
              <Tile id={campaign.id} filter="unsubscribed" label="Unsubscribed" value={s.unsubscribed} rate={pct(s.unsubscribed, s.delivered)} of="of delivered" />
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
    <div className="tile" data-testid={`tile-${label.toLowerCase()}`}>
      <dt><Link href={recipientsHref(id, filter)}>{label}</Link></dt>
      <dd><strong>{value.toLocaleString()}</strong> <span className="muted small">{rate} {of}</span></dd>
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

const COUNT_SERIES: Array<{ key: 'delivered' | 'uniqueOpened' | 'uniqueClicked' | 'bounced' | 'complained' | 'unsubscribed'; label: string; color: string }> = [
  { key: 'delivered', label: 'Delivered', color: '#2952cc' },
  { key: 'uniqueOpened', label: 'Opened', color: '#067647' },
  { key: 'uniqueClicked', label: 'Clicked', color: '#7a4a00' },
  { key: 'bounced', label: 'Bounced', color: '#b42318' },
  { key: 'complained', label: 'Complained', color: '#9e2a9b' },
  { key: 'unsubscribed', label: 'Unsubscribed', color: '#5b6475' },
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
    const counts: Series[] = COUNT_SERIES.map((s) => ({ label: s.label, color: s.color, values: data.map((p) => p[s.key]) }))
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
      { label: 'Open rate %', color: '#067647', values: open },
      { label: 'Click rate %', color: '#7a4a00', values: click },
      { label: 'Bounce rate %', color: '#b42318', values: bounce },
    ]
    return { x, counts, rates }
  }, [ts.data])
  return (
    <section className="card" aria-labelledby="time-h">
      <h2 id="time-h">Over time</h2>
      <p className="small muted">Per {interval}, in your time zone ({zone}).</p>
      <ErrorBox error={ts.error} />
      {ts.isPending && <Loading />}
      {ts.data && (
        <div className="charts">
          <div>
            <h3>Counts per {interval}</h3>
            <TimeChart x={chart.x} series={chart.counts} label={`Delivered, opened, clicked, bounced, complained and unsubscribed per ${interval}`} empty="Nothing delivered yet." />
          </div>
          <div>
            <h3>Rates so far</h3>
            <TimeChart x={chart.x} series={chart.rates} label="Open, click and bounce rates over time, in percent" empty="No rate until mail is delivered." />
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
      <h2 id="links-h">Top links clicked</h2>
      <ErrorBox error={links.error} />
      {links.isPending && <Loading />}
      {links.data?.data.length === 0 && <Empty title="No clicks yet">Links in the campaign are tracked when the project's click tracking is on (Settings).</Empty>}
      {links.data && links.data.data.length > 0 && (
        <div className="table-wrap"><table>
          <thead><tr><th scope="col">Link</th><th scope="col">Clicks</th><th scope="col">Unique clicks</th><th scope="col"><span className="sr-only">Recipients</span></th></tr></thead>
          <tbody>{links.data.data.map((l) => (
            <tr key={l.url}><td className="value"><a href={l.url} target="_blank" rel="noreferrer noopener">{l.url}</a></td><td>{l.clicks.toLocaleString()}</td><td>{l.uniqueClicks.toLocaleString()}</td><td><Link href={recipientsHref(id, 'clicked', l.url)}>Who clicked</Link></td></tr>
          ))}</tbody>
        </table></div>
      )}
    </section>
  )
}
