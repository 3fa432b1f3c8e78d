import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { post, type Project } from '../../api'
import { Badge, ConfirmButton, Empty, ErrorBox, formatDate, Loading, PageHead } from '../../components/ui'
import { Meter } from './meter'
import { num, pct, type SecurityState, securityQuery } from './data'

const STATUS: Record<SecurityState['status'], string> = { ok: 'Good standing', warning: 'Warning', suspended: 'Suspended' }

/** One rate against its warning and suspension thresholds. */
function RateMeter({ name, count, rate, warning, suspend, sent }: { name: string; count: number; rate: number; warning: number; suspend: number; sent: number }) {
  const tone = rate >= suspend ? 'danger' : rate >= warning ? 'warn' : 'ok'
  const max = Math.max(suspend * 1.5, rate * 1.1)
  const text = `${pct(rate)} (${num(count)} of ${num(sent)} sent); warning at ${pct(warning)}, suspension at ${pct(suspend)}`
  return (
    <div className="rate">
      <h3 style={{ margin: '0 0 .2rem', fontSize: '1rem' }}>{name} rate: <span data-testid={`${name.toLowerCase()}-rate`}>{pct(rate)}</span></h3>
      <p className="small muted" style={{ margin: 0 }}>{num(count)} of {num(sent)} sent · warning at {pct(warning)} · suspension at {pct(suspend)}</p>
      <Meter label={`${name} rate`} value={rate} max={max} valueText={text} tone={tone}
        marks={[{ at: warning, label: `warning ${pct(warning)}`, tone: 'warn' }, { at: suspend, label: `suspension ${pct(suspend)}`, tone: 'danger' }]} />
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
  if (state.isPending) return <><PageHead title="Security" /><Loading /></>
  if (state.error) return <><PageHead title="Security" /><ErrorBox error={state.error} /></>
  const s = state.data
  const t = s.thresholds
  const enforced = s.sent >= t.minimumSent
  return (
    <div>
      <PageHead title="Security"><Badge status={s.status}>{STATUS[s.status]}</Badge></PageHead>
      {s.status === 'suspended' && (
        <div className="alert error" role="alert">
          <p><strong>This project is suspended.</strong> Its sends are refused (403 PROJECT_DISABLED) until an owner lifts the suspension.</p>
          {project.role === 'OWNER' ? (
            <>
              <p>Fix the cause first (clean the list of the addresses that bounce, stop mailing those who complain); the rates then count again from the lift.</p>
              <ErrorBox error={lift.error} />
              <ConfirmButton label="Lift the suspension" confirm="Sends start again at once. Lift it?" onConfirm={() => lift.mutate()} busy={lift.isPending} />
            </>
          ) : <p>Ask the project’s owner to lift it.</p>}
        </div>
      )}
      {s.status === 'warning' && (
        <div className="alert warn" role="status">
          <p><strong>Warning:</strong> the project is close to being suspended.</p>
          <ul>{s.warnings.map((w) => <li key={w}>{w}</li>)}</ul>
          <p style={{ marginBottom: 0 }}>Remove the addresses that bounce and those who complain from your lists before you send again.</p>
        </div>
      )}
      <div className="card">
        <h2>Rates over the last {s.windowDays} days</h2>
        <p className="small muted">Since {formatDate(s.windowStart)}: {num(s.sent)} emails sent. {enforced
          ? `The thresholds apply (at least ${num(t.minimumSent)} emails sent).`
          : `The thresholds apply once ${num(t.minimumSent)} emails are sent in the window; ${num(s.sent)} so far.`}</p>
        <div className="grid2" style={{ marginTop: '1rem' }}>
          <RateMeter name="Bounce" count={s.bounced} rate={s.bounceRate} warning={t.bounceWarning} suspend={t.bounceSuspend} sent={s.sent} />
          <RateMeter name="Complaint" count={s.complained} rate={s.complaintRate} warning={t.complaintWarning} suspend={t.complaintSuspend} sent={s.sent} />
        </div>
      </div>
      <div className="card">
        <h2>Suspensions</h2>
        {s.suspensions.length === 0 ? (
          <Empty title="Never suspended">A project is suspended automatically when a rate passes its suspension threshold.</Empty>
        ) : (
          <div className="table-wrap"><table>
            <thead><tr><th scope="col">Suspended</th><th scope="col">Reason</th><th scope="col">Lifted</th></tr></thead>
            <tbody>{s.suspensions.map((x) => (
              <tr key={x.at}><td>{formatDate(x.at)}</td><td>{x.reason}</td><td>{x.liftedAt ? formatDate(x.liftedAt) : <Badge status="suspended">Still suspended</Badge>}</td></tr>
            ))}</tbody>
          </table></div>
        )}
      </div>
    </div>
  )
}
