import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { post, type Project } from '../../api'
import { Badge, ConfirmButton, Empty, ErrorBox, formatDate, Loading, PageHead } from '../../components/ui'
import { Meter } from './meter'
import { num, pct, type SecurityState, securityQuery } from './data'
import { t } from '../../i18n'

const statusLabel = (s: SecurityState['status']) => t(`sec.status.${s}`)

/** One rate against its warning and suspension thresholds. */
function RateMeter({ id, name, count, rate, warning, suspend, sent }: { id: string; name: string; count: number; rate: number; warning: number; suspend: number; sent: number }) {
  const tone = rate >= suspend ? 'danger' : rate >= warning ? 'warn' : 'ok'
  const max = Math.max(suspend * 1.5, rate * 1.1)
  const text = t('sec.rateText', { rate: pct(rate), count: num(count), sent: num(sent), warning: pct(warning), suspend: pct(suspend) })
  return (
    <div className="rate">
      <h3 style={{ margin: '0 0 .2rem', fontSize: '1rem' }}>{t('sec.rateTitle', { name })}<span data-testid={`${id}-rate`}>{pct(rate)}</span></h3>
      <p className="small muted" style={{ margin: 0 }}>{t('sec.rateLine', { count: num(count), sent: num(sent), warning: pct(warning), suspend: pct(suspend) })}</p>
      <Meter label={t('sec.rate', { name })} value={rate} max={max} valueText={text} tone={tone}
        marks={[{ at: warning, label: t('sec.markWarning', { pct: pct(warning) }), tone: 'warn' }, { at: suspend, label: t('sec.markSuspend', { pct: pct(suspend) }), tone: 'danger' }]} />
    </div>
  )
}

/**
 * The project's security (docs/decisions.md, Usage caps, consumption, security): the bounce and complaint
 * rates of the last 7 days against the thresholds, the status, and the suspensions; an OWNER may lift one.
 */
export function SecurityPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const state = useQuery(securityQuery(project.id))
  const lift = useMutation({
    mutationFn: () => post<SecurityState>(`/users/@me/projects/${project.id}/enable`),
    onSuccess: async (s) => { qc.setQueryData(['security', project.id], s); await qc.invalidateQueries({ queryKey: ['projects'] }) },
  })
  if (state.isPending) return <><PageHead title={t('nav.security')} /><Loading /></>
  if (state.error) return <><PageHead title={t('nav.security')} /><ErrorBox error={state.error} /></>
  const s = state.data
  const th = s.thresholds
  const enforced = s.sent >= th.minimumSent
  return (
    <div>
      <PageHead title={t('nav.security')}><Badge status={s.status}>{statusLabel(s.status)}</Badge></PageHead>
      {s.status === 'suspended' && (
        <div className="alert error" role="alert">
          <p><strong>{t('sec.suspended')}</strong>{t('sec.suspendedText')}</p>
          {project.role === 'OWNER' ? (
            <>
              <p>{t('sec.fixFirst')}</p>
              <ErrorBox error={lift.error} />
              <ConfirmButton label={t('sec.lift')} confirm={t('sec.liftConfirm')} onConfirm={() => lift.mutate()} busy={lift.isPending} />
            </>
          ) : <p>{t('sec.askOwner')}</p>}
        </div>
      )}
      {s.status === 'warning' && (
        <div className="alert warn" role="status">
          <p><strong>{t('sec.warning')}</strong>{t('sec.close')}</p>
          <ul>{s.warnings.map((w) => <li key={w}>{w}</li>)}</ul>
          <p style={{ marginBottom: 0 }}>{t('sec.clean')}</p>
        </div>
      )}
      <div className="card">
        <h2>{t('sec.window', { days: s.windowDays })}</h2>
        <p className="small muted">{t('sec.since', { at: formatDate(s.windowStart), sent: num(s.sent) })}{enforced
          ? t('sec.apply', { min: num(th.minimumSent) })
          : t('sec.applyOnce', { min: num(th.minimumSent), sent: num(s.sent) })}</p>
        <div className="grid2" style={{ marginTop: '1rem' }}>
          <RateMeter id="bounce" name={t('sec.bounce')} count={s.bounced} rate={s.bounceRate} warning={th.bounceWarning} suspend={th.bounceSuspend} sent={s.sent} />
          <RateMeter id="complaint" name={t('sec.complaint')} count={s.complained} rate={s.complaintRate} warning={th.complaintWarning} suspend={th.complaintSuspend} sent={s.sent} />
        </div>
      </div>
      <div className="card">
        <h2>{t('sec.suspensions')}</h2>
        {s.suspensions.length === 0 ? (
          <Empty title={t('sec.never')}>{t('sec.neverText')}</Empty>
        ) : (
          <div className="table-wrap"><table>
            <thead><tr><th scope="col">{t('sec.suspendedAt')}</th><th scope="col">{t('sec.reason')}</th><th scope="col">{t('sec.lifted')}</th></tr></thead>
            <tbody>{s.suspensions.map((x) => (
              <tr key={x.at}><td>{formatDate(x.at)}</td><td>{x.reason}</td><td>{x.liftedAt ? formatDate(x.liftedAt) : <Badge status="suspended">{t('sec.still')}</Badge>}</td></tr>
            ))}</tbody>
          </table></div>
        )}
      </div>
    </div>
  )
}
