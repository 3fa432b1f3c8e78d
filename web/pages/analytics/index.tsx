import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { type FormEvent, useMemo, useState } from 'react'
import { Link } from 'wouter'
import { get, type Project } from '../../api'
import { type Series, TimeChart } from '../../components/chart'
import { Empty, ErrorBox, FormField, Loading, PageHead } from '../../components/ui'
import { browserZone, type Counts, METRIC_COLOR, METRICS, metricLabel, type Metric, num, pct, type Timeseries, timeseriesQuery, type TopCampaigns, type TopEvents } from './data'
import { formatDate, formatDay } from '../../format'
import { t } from '../../i18n'

export { SecurityPage } from './security'
export { UsagePage } from './usage'
export { ProjectPulse } from './pulse'

type Preset = '24h' | '7d' | '30d' | 'custom'
interface Range { preset: Preset; interval: 'hour' | 'day'; from: string; to?: string }

const DAY = 86_400_000
const RANK = ['sent', 'delivered', 'opened', 'uniqueOpened', 'clicked', 'uniqueClicked', 'bounced', 'complained', 'unsubscribed'] as const
const rankLabel = (m: (typeof RANK)[number]) => t(`rank.${m}`)

/** Local midnight `daysAgo` days before today, as an instant. */
function localMidnight(daysAgo: number, now = new Date()): Date {
  return new Date(now.getFullYear(), now.getMonth(), now.getDate() - daysAgo)
}
/** A YYYY-MM-DD of an <input type="date"> as the local midnight that starts it. */
function parseDay(value: string): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value)
  return m ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : null
}
const dayInput = (d: Date) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`

function presetRange(preset: Exclude<Preset, 'custom'>, interval?: 'hour' | 'day'): Range {
  const now = new Date()
  if (preset === '24h') return { preset, interval: interval ?? 'hour', from: new Date(now.getTime() - DAY).toISOString() }
  const days = preset === '7d' ? 7 : 30
  const iv = interval ?? 'day'
  // By day: whole local days, today included; by hour: the last 7 or 30 times 24 hours.
  return { preset, interval: iv, from: (iv === 'day' ? localMidnight(days - 1, now) : new Date(now.getTime() - days * DAY)).toISOString() }
}

/**
 * Analytics: sent, delivered, opened, clicked, bounced and complained per hour or day over a range, in the
 * viewer's time zone (the API buckets the days in it), with the figures as a table for screen readers; the
 * top campaigns by a chosen metric and the most frequent events over the same range.
 */
export function AnalyticsPage({ project }: { project: Project }) {
  const zone = useMemo(browserZone, [])
  const [range, setRange] = useState<Range>(() => presetRange('7d'))
  const [customError, setCustomError] = useState('')
  const series = useQuery({ ...timeseriesQuery(project.id, { interval: range.interval, from: range.from, to: range.to, timezone: zone }), placeholderData: keepPreviousData })

  const choosePreset = (p: Preset) => {
    setCustomError('')
    if (p === 'custom') setRange((r) => ({ ...r, preset: 'custom', interval: 'day' }))
    else setRange(presetRange(p))
  }
  const chooseInterval = (iv: 'hour' | 'day') => {
    if (range.preset === 'custom') setRange((r) => ({ ...r, interval: iv }))
    else setRange(presetRange(range.preset, iv))
  }
  const applyCustom = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    const from = parseDay(String(f.get('from') ?? ''))
    const to = parseDay(String(f.get('to') ?? ''))
    if (!from || !to) return setCustomError(t('an.bothDays'))
    if (to < from) return setCustomError(t('an.order'))
    setCustomError('')
    const end = new Date(to.getFullYear(), to.getMonth(), to.getDate() + 1)
    setRange({ preset: 'custom', interval: range.interval, from: from.toISOString(), to: end.toISOString() })
  }

  const d = series.data
  const empty = d && METRICS.every((m) => d.totals[m] === 0)
  return (
    <div>
      <PageHead title={t('nav.analytics')} />
      <div className="card">
        <div className="row">
          <FormField label={t('an.range')} id="an-range">
            {(c) => (
              <select {...c} value={range.preset} onChange={(e) => choosePreset(e.target.value as Preset)}>
                <option value="24h">{t('an.last24h')}</option>
                <option value="7d">{t('an.last7d')}</option>
                <option value="30d">{t('an.last30d')}</option>
                <option value="custom">{t('an.custom')}</option>
              </select>
            )}
          </FormField>
          <FormField label={t('an.groupBy')} id="an-interval">
            {(c) => (
              <select {...c} value={range.interval} onChange={(e) => chooseInterval(e.target.value as 'hour' | 'day')}>
                <option value="hour">{t('an.hour')}</option>
                <option value="day">{t('an.day')}</option>
              </select>
            )}
          </FormField>
          <button type="button" className="secondary" onClick={() => void series.refetch()} disabled={series.isFetching}>{series.isFetching ? t('ui.loading') : t('an.refresh')}</button>
        </div>
        {range.preset === 'custom' && (
          <form className="row" onSubmit={applyCustom} noValidate style={{ marginTop: '.75rem' }}>
            <FormField label={t('an.firstDay')} id="an-from" invalid={!!customError} describedBy={customError ? 'an-custom-err' : undefined}>
              {(c) => <input {...c} name="from" type="date" defaultValue={dayInput(new Date(range.from))} />}
            </FormField>
            <FormField label={t('an.lastDay')} id="an-to" invalid={!!customError} describedBy={customError ? 'an-custom-err' : undefined}>
              {(c) => <input {...c} name="to" type="date" defaultValue={dayInput(range.to ? new Date(new Date(range.to).getTime() - 1) : new Date())} />}
            </FormField>
            <button type="submit">{t('an.show')}</button>
            {customError && <span id="an-custom-err" className="err small" role="alert">{customError}</span>}
          </form>
        )}
        <p className="small muted" style={{ marginBottom: 0 }}>{t('an.zone', { zone })}</p>
      </div>
      {series.isPending && <Loading />}
      <ErrorBox error={series.error} />
      {d && empty && (
        <div className="card">
          <Empty title={t('an.noMail')}>
            <p>{d.interval === 'day'
              ? t('an.noMailDays', { from: formatDay(d.from), to: formatDay(Date.parse(d.to) - 1) })
              : t('an.noMailHours', { from: formatDate(d.from), to: formatDate(d.to) })}</p>
            <p>{t('an.sendWith1')}<code>POST /v1/send</code>{t('an.sendWith2')}</p>
          </Empty>
        </div>
      )}
      {d && !empty && <Charts data={d} />}
      {d && <div className="grid2"><TopCampaignsCard project={project} from={d.from} to={d.to} /><TopEventsCard project={project} from={d.from} to={d.to} /></div>}
    </div>
  )
}

function Totals({ totals }: { totals: Counts }) {
  const rate = (m: Metric) => {
    if (m === 'delivered') return totals.sent ? t('an.ofSent', { pct: pct(totals.delivered / totals.sent) }) : ''
    if (m === 'opened') return totals.delivered ? t('an.unique', { pct: pct(totals.uniqueOpened / totals.delivered) }) : ''
    if (m === 'clicked') return totals.delivered ? t('an.unique', { pct: pct(totals.uniqueClicked / totals.delivered) }) : ''
    if (m === 'bounced' || m === 'complained') return totals.sent ? t('an.ofSent', { pct: pct(totals[m] / totals.sent) }) : ''
    return ''
  }
  return (
    <dl className="tiles">
      {METRICS.map((m) => <div key={m}><dt>{metricLabel(m)}</dt><dd><span className="n">{num(totals[m])}</span>{rate(m) && <small>{rate(m)}</small>}</dd></div>)}
    </dl>
  )
}

const GROUPS: Array<{ metrics: [Metric, Metric] }> = [{ metrics: ['sent', 'delivered'] }, { metrics: ['opened', 'clicked'] }, { metrics: ['bounced', 'complained'] }]

function Charts({ data }: { data: Timeseries }) {
  const x = useMemo(() => data.data.map((b) => Date.parse(b.start) / 1000), [data])
  const groups = useMemo(() => GROUPS.map((g) => ({
    title: t(`an.group.${g.metrics[0]}` as 'an.group.sent'), empty: t(`an.group.${g.metrics[0]}.empty` as 'an.group.sent.empty'),
    series: g.metrics.map((m): Series => ({ label: metricLabel(m), color: METRIC_COLOR[m], values: data.data.map((b) => b[m]) })),
  })), [data])
  const hourly = data.interval === 'hour'
  return (
    <>
      <div className="card">
        <h2>{t('an.totals')}</h2>
        <Totals totals={data.totals} />
      </div>
      <div className="grid2">
        {groups.map((g, i) => (
          <section key={g.title} className="card" aria-labelledby={`an-chart-${i}`} style={i === 2 ? { gridColumn: '1 / -1' } : undefined}>
            <h2 id={`an-chart-${i}`}>{t(hourly ? 'an.perHour' : 'an.perDay', { title: g.title })}</h2>
            <TimeChart x={x} series={g.series} interval={data.interval} counts label={t(hourly ? 'an.chartLabelHour' : 'an.chartLabelDay', { title: g.title, count: data.data.length })} height={220} empty={g.empty} />
          </section>
        ))}
      </div>
      <div className="card">
        <details className="figures">
          <summary>{t(hourly ? 'an.tableHour' : 'an.tableDay')}</summary>
          <div className="table-wrap"><table className="rows">
            <caption className="skip">{t(hourly ? 'an.captionHour' : 'an.captionDay', { zone: data.timezone })}</caption>
            <thead><tr><th scope="col">{hourly ? t('an.hour') : t('an.day')}</th>{METRICS.map((m) => <th key={m} scope="col">{metricLabel(m)}</th>)}</tr></thead>
            <tbody>{data.data.map((b) => (
              <tr key={b.start}><th scope="row">{b.label}</th>{METRICS.map((m) => <td key={m}>{num(b[m])}</td>)}</tr>
            ))}</tbody>
            <tfoot><tr><th scope="row">{t('an.total')}</th>{METRICS.map((m) => <td key={m}><strong>{num(data.totals[m])}</strong></td>)}</tr></tfoot>
          </table></div>
        </details>
      </div>
    </>
  )
}

function TopCampaignsCard({ project, from, to }: { project: Project; from: string; to: string }) {
  const [metric, setMetric] = useState<(typeof RANK)[number]>('sent')
  const q = new URLSearchParams({ metric, from, to, limit: '10' })
  const top = useQuery({
    queryKey: ['analytics', project.id, 'top-campaigns', metric, from, to],
    queryFn: () => get<TopCampaigns>(`/analytics/top-campaigns?${q}`, project.id),
    placeholderData: keepPreviousData,
  })
  return (
    <section className="card" aria-labelledby="an-top-campaigns">
      <div className="head" style={{ marginBottom: '.5rem' }}>
        <h2 id="an-top-campaigns" style={{ margin: 0 }}>{t('an.topCampaigns')}</h2>
        <div className="field" style={{ marginBottom: 0 }}><span><label htmlFor="an-rank">{t('an.rankedBy')}</label></span>
          <select id="an-rank" value={metric} onChange={(e) => setMetric(e.target.value as (typeof RANK)[number])}>
            {RANK.map((m) => <option key={m} value={m}>{rankLabel(m)}</option>)}
          </select>
        </div>
      </div>
      {top.isPending && <Loading />}
      <ErrorBox error={top.error} />
      {top.data?.data.length === 0 && <Empty title={t('an.noCampaign')}>{metric === 'sent' ? t('an.noCampaignSent') : t('an.noCampaignMetric', { metric: rankLabel(metric) })}</Empty>}
      {top.data && top.data.data.length > 0 && (
        <div className="table-wrap"><table>
          <thead><tr><th scope="col">{t('an.campaign')}</th><th scope="col">{rankLabel(metric)}</th></tr></thead>
          <tbody>{top.data.data.map((c) => (
            <tr key={c.campaignId}>
              <td>{c.name ?? <span className="muted">{t('an.deletedCampaign')}</span>}{c.status && <span className="small muted"> · {c.status.toLowerCase()}</span>}</td>
              <td>{num(c.value)}</td>
            </tr>
          ))}</tbody>
        </table></div>
      )}
    </section>
  )
}

function TopEventsCard({ project, from, to }: { project: Project; from: string; to: string }) {
  const q = new URLSearchParams({ from, to, limit: '10' })
  const top = useQuery({
    queryKey: ['analytics', project.id, 'top-events', from, to],
    queryFn: () => get<TopEvents>(`/analytics/top-events?${q}`, project.id),
    placeholderData: keepPreviousData,
  })
  return (
    <section className="card" aria-labelledby="an-top-events">
      <h2 id="an-top-events">{t('an.topEvents')}</h2>
      {top.isPending && <Loading />}
      <ErrorBox error={top.error} />
      {top.data?.data.length === 0 && <Empty title={t('an.noEvents')}>{t('an.noEventsText1')}<code>POST /v1/track</code>{t('an.noEventsText2')}</Empty>}
      {top.data && top.data.data.length > 0 && (
        <div className="table-wrap"><table>
          <thead><tr><th scope="col">{t('an.event')}</th><th scope="col">{t('an.count')}</th></tr></thead>
          <tbody>{top.data.data.map((e) => <tr key={e.name}><td><code>{e.name}</code></td><td>{num(e.count)}</td></tr>)}</tbody>
        </table></div>
      )}
      <p className="small muted" style={{ marginBottom: 0 }}>{t('an.seeSecurity1')}<Link href="/security">{t('an.seeSecurityLink')}</Link>{t('an.seeSecurity2')}</p>
    </section>
  )
}
