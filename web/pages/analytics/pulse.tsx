import { useQuery } from '@tanstack/react-query'
import { useMemo } from 'react'
import { Link } from 'wouter'
import { type Domain, get, type Project } from '../../api'
import { TimeChart } from '../../components/chart'
import { Badge, ErrorBox, formatDate, Loading } from '../../components/ui'
import { type ActivityItem, type ActivityPage, browserZone, type Counts, METRIC_COLOR, num, pct, securityQuery, timeseriesQuery, type Upcoming } from './data'
import { type MessageKey, t } from '../../i18n'

const FIGURES = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained'] as const

function Figures({ title, totals, testid }: { title: string; totals: Counts | undefined; testid: string }) {
  return (
    <section className="card" aria-labelledby={`${testid}-h`} data-testid={testid}>
      <h2 id={`${testid}-h`}>{title}</h2>
      {!totals ? <Loading /> : (
        <dl className="tiles">
          {FIGURES.map((m) => <div key={m}><dt>{t(`metric.${m}`)}</dt><dd><span className="n">{num(totals[m])}</span></dd></div>)}
        </dl>
      )}
    </section>
  )
}

const EVENTS = new Set(['email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received', 'contact.subscribed', 'contact.unsubscribed'])
const eventText = (type: string) => (EVENTS.has(type) ? t(`pulse.event.${type}` as MessageKey) : type)

function describe(a: ActivityItem): { what: string; who: string; tone: string } {
  if (a.kind === 'email') return { what: t('pulse.email', { subject: a.subject }), who: t('pulse.to', { email: a.to }), tone: a.status.toLowerCase() }
  const who = a.contact?.email ?? (typeof a.data.from === 'string' ? t('pulse.from', { email: a.data.from }) : '')
  const subject = typeof a.data.subject === 'string' ? ` “${a.data.subject}”` : ''
  return { what: `${eventText(a.type)}${subject}`, who, tone: a.type === 'email.bounce' || a.type === 'email.complaint' ? 'failed' : 'ok' }
}

/**
 * The overview's figures (the Home page): mail of the last 24 hours and 30 days, deliverability alerts
 * (domains not verified, bounce or complaint rates at warning or suspended), what is scheduled, and the
 * latest activity. Every part reads the API the other pages use; a part that fails says so on its own.
 */
export function ProjectPulse({ project }: { project: Project }) {
  const zone = useMemo(browserZone, [])
  // A disabled (suspended) project's key routes answer 403: only its security state is asked then.
  const enabled = !project.disabled
  const day = useQuery({ ...timeseriesQuery(project.id, { interval: 'hour', timezone: zone }), enabled })
  const month = useQuery({ ...timeseriesQuery(project.id, { interval: 'day', timezone: zone }), enabled })
  const domains = useQuery({ queryKey: ['domains', project.id], queryFn: () => get<Domain[]>(`/domains/project/${project.id}`, project.id), enabled })
  const security = useQuery(securityQuery(project.id))
  const upcoming = useQuery({ queryKey: ['upcoming', project.id], queryFn: () => get<Upcoming>('/activity/upcoming?limit=5', project.id), enabled })
  const recent = useQuery({ queryKey: ['activity', project.id, 'recent'], queryFn: () => get<ActivityPage>('/activity?limit=8', project.id), enabled })
  const x = useMemo(() => month.data?.data.map((b) => Date.parse(b.start) / 1000) ?? [], [month.data])
  const sent = useMemo(() => [{ label: t('metric.sent'), color: METRIC_COLOR.sent, values: month.data?.data.map((b) => b.sent) ?? [] }], [month.data])

  const unverified = domains.data?.filter((d) => !d.verified) ?? []
  const s = security.data
  return (
    <>
      <section aria-labelledby="alerts-h">
        <h2 id="alerts-h" className="skip">{t('pulse.alerts')}</h2>
        <ErrorBox error={domains.error ?? security.error} />
        {(unverified.length > 0 || (s && s.status !== 'ok')) && (
          <ul className="alerts">
            {s && s.status === 'suspended' && (
              <li><div className="alert error">{t('pulse.suspended1')}<strong>{t('pulse.suspended2')}</strong>{t('pulse.suspended3')}<Link href="/security">{t('pulse.seeWhy')}</Link>.</div></li>
            )}
            {s && s.status === 'warning' && (
              <li><div className="alert warn">{t('pulse.warning', { text: s.warnings.join('; ') || t('pulse.rates', { bounce: pct(s.bounceRate), complaint: pct(s.complaintRate) }) })}<Link href="/security">{t('nav.security')}</Link></div></li>
            )}
            {unverified.map((d) => {
              const dkim = d.records.find((r) => r.purpose === 'DKIM')
              const failing = d.lastCheckedAt && dkim?.status === 'failed'
              return (
                <li key={d.id}><div className="alert warn">
                  {t('pulse.domain1')}<strong>{d.domain}</strong>{failing ? t('pulse.domainFailed', { at: formatDate(d.lastCheckedAt) }) : t('pulse.domainYet')}<Link href={`/domains/${d.id}`}>{t('pulse.checkDns')}</Link>
                </div></li>
              )
            })}
          </ul>
        )}
      </section>
      {enabled && <>
        <div className="grid2">
          <Figures title={t('pulse.last24h')} totals={day.data?.totals} testid="last-24h" />
          <Figures title={t('pulse.last30d')} totals={month.data?.totals} testid="last-30d" />
        </div>
        <ErrorBox error={day.error ?? month.error} />
        {month.data && (
          <section className="card" aria-labelledby="sent-30-h" style={{ marginTop: '1rem' }}>
            <div className="head" style={{ marginBottom: '.5rem' }}><h2 id="sent-30-h" style={{ margin: 0 }}>{t('pulse.sentPerDay')}</h2><Link href="/analytics">{t('pulse.allAnalytics')}</Link></div>
            <TimeChart x={x} series={sent} interval="day" counts height={140} label={t('pulse.chartLabel', { sent: num(month.data.totals.sent) })} empty={t('pulse.nothingSent')} />
          </section>
        )}
        <div className="grid2" style={{ marginTop: '1rem' }}>
          <section className="card" aria-labelledby="upcoming-h">
            <h2 id="upcoming-h">{t('pulse.scheduled')}</h2>
            {upcoming.isPending && <Loading />}
            <ErrorBox error={upcoming.error} />
            {upcoming.data?.data.length === 0 && <p className="muted">{t('pulse.nothingScheduled')}</p>}
            {upcoming.data && upcoming.data.data.length > 0 && (
              <>
                <ul className="feed">{upcoming.data.data.map((u) => (
                  <li key={`${u.kind}-${u.id}`}><span><Badge status="pending">{t(`status.${u.kind}` as MessageKey)}</Badge> {u.title}</span><span className="small muted"><time dateTime={u.at}>{formatDate(u.at)}</time></span></li>
                ))}</ul>
                {upcoming.data.total > upcoming.data.data.length && <p className="small muted">{t('pulse.more', { n: num(upcoming.data.total - upcoming.data.data.length) })}</p>}
              </>
            )}
          </section>
          <section className="card" aria-labelledby="recent-h">
            <h2 id="recent-h">{t('pulse.recent')}</h2>
            {recent.isPending && <Loading />}
            <ErrorBox error={recent.error} />
            {recent.data?.data.length === 0 && <p className="muted">{t('pulse.noActivity')}</p>}
            {recent.data && recent.data.data.length > 0 && (
              <ul className="feed">{recent.data.data.map((a) => {
                const d = describe(a)
                return (
                  <li key={`${a.kind}-${a.id}`}>
                    <span>{d.what} <span className="small muted">{d.who}</span>{a.kind === 'email' && <> <Badge status={d.tone}>{t(`status.${a.status.toLowerCase()}` as MessageKey)}</Badge></>}</span>
                    <span className="small muted"><time dateTime={a.createdAt}>{formatDate(a.createdAt)}</time></span>
                  </li>
                )
              })}</ul>
            )}
          </section>
        </div>
      </>}
    </>
  )
}
