import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { Link } from 'wouter'
import { get, type Project } from '../../api'
import { Badge, CopyButton, Empty, ErrorBox, formatDate, Loading, PageHead } from '../../components/ui'
import { type ActivityPage, type Attempts, type EmailDetail as EmailDetailRecord, type EmailRecord, type EventItem, type Headers, statusTone, TYPE_LABELS } from './types'

/** The moments of an email's record, oldest first: its status history. */
function history(e: EmailRecord): Array<{ label: string; at: string; tone: string; note?: string }> {
  const steps: Array<{ label: string; at: string | null; tone: string; note?: string }> = [
    { label: 'Queued', at: e.createdAt, tone: '' },
    { label: 'Sent', at: e.sentAt, tone: 'ok', note: e.deliveredTo && !e.deliveredAt ? `accepted by ${e.deliveredTo}` : undefined },
    { label: 'Delivered', at: e.deliveredAt, tone: 'ok', note: e.deliveredTo ? `to ${e.deliveredTo}` : undefined },
    { label: 'First opened', at: e.openedAt, tone: 'ok' },
    { label: 'First clicked', at: e.clickedAt, tone: 'ok' },
    { label: e.bounceType ? `Bounced (${e.bounceType})` : 'Bounced', at: e.bouncedAt, tone: 'failed' },
    { label: 'Complaint', at: e.complainedAt, tone: 'failed' },
    { label: 'Failed', at: e.failedAt, tone: 'failed' },
  ]
  return steps.filter((s): s is { label: string; at: string; tone: string; note?: string } => s.at !== null)
    .sort((a, b) => Date.parse(a.at) - Date.parse(b.at))
}

/** What an email on its way is doing now (GET /emails/:id, deliveryState); nothing once it is done. */
function deliveryNote(e: EmailDetailRecord): { label: string; text: string } | null {
  const at = e.nextAttemptAt ? formatDate(e.nextAttemptAt) : null
  if (e.deliveryState === 'WAITING_RETRY') return { label: 'Waiting to retry', text: at ? `The receiving server deferred it; the next attempt is at ${at}.` : 'The receiving server deferred it; the next attempt is due now.' }
  if (e.deliveryState === 'SENDING') return { label: 'Sending', text: 'An attempt is under way.' }
  if (e.deliveryState === 'QUEUED') return { label: 'Queued', text: at ? `Queued for its first attempt at ${at}.` : 'Queued: the first attempt is made within seconds while the server runs.' }
  return null
}

const OUTCOME: Record<string, { label: string; tone: string }> = {
  deferred: { label: 'Deferred', tone: 'pending' },
  accepted: { label: 'Accepted', tone: 'ok' },
  captured: { label: 'Captured', tone: 'ok' },
  bounced: { label: 'Bounced', tone: 'failed' },
  failed: { label: 'Failed', tone: 'failed' },
}

export function EmailDetail({ project, id }: { project: Project; id: string }) {
  // While the email is on its way, its record is read again every few seconds; the attempts follow it.
  const email = useQuery({
    queryKey: ['email', project.id, id], queryFn: () => get<EmailDetailRecord>(`/emails/${id}`, project.id),
    refetchInterval: (q) => (q.state.data && q.state.data.deliveryState !== 'DONE' ? 2000 : false),
  })
  const version = email.data ? `${email.data.status}/${email.data.attempts}/${email.data.updatedAt}/${email.data.deliveryState}` : ''
  const attempts = useQuery({ queryKey: ['email-attempts', project.id, id, version], queryFn: () => get<Attempts>(`/emails/${id}/attempts`, project.id), enabled: email.isSuccess, placeholderData: keepPreviousData })
  const headers = useQuery({ queryKey: ['email-headers', project.id, id], queryFn: () => get<Headers>(`/emails/${id}/headers`, project.id), enabled: email.isSuccess })
  const events = useQuery({
    queryKey: ['email-events', project.id, id, version],
    queryFn: () => get<ActivityPage>(`/activity?emailId=${encodeURIComponent(id)}&type=email.open,email.click,email.bounce,email.complaint,email.delivery&limit=100`, project.id),
    enabled: email.isSuccess,
    placeholderData: keepPreviousData,
  })
  if (email.isPending) return <Loading />
  if (email.error) return <><ErrorBox error={email.error} /><Link href="/activity">← Activity</Link></>
  const e = email.data
  const evs = (events.data?.data ?? []).filter((i): i is EventItem => i.kind === 'event')
  const opens = evs.filter((v) => v.type === 'email.open')
  const clicks = evs.filter((v) => v.type === 'email.click')
  const reports = evs.filter((v) => v.type === 'email.bounce' || v.type === 'email.complaint')
  const now = deliveryNote(e)
  return (
    <div>
      <PageHead title={e.subject || '(no subject)'}>
        <Badge status={statusTone(e.status)}>{e.status}</Badge>
        {now && <Badge status="pending">{now.label}</Badge>}
      </PageHead>
      <p className="small muted"><Link href="/activity">← Activity</Link> · {e.sourceType} · {e.type.toLowerCase()}</p>
      <div className="card">
        <h2>Message</h2>
        <dl className="facts">
          <dt>From</dt><dd>{e.fromName ? `${e.fromName} <${e.from}>` : e.from}</dd>
          <dt>To</dt><dd>{e.contactId ? <Link href={`/contacts/${e.contactId}`}>{e.toName ? `${e.toName} <${e.to}>` : e.to}</Link> : e.to}</dd>
          {e.replyTo && <><dt>Reply-To</dt><dd>{e.replyTo}</dd></>}
          <dt>Message-ID</dt><dd><code>{e.messageId}</code></dd>
          <dt>Email id</dt><dd><code>{e.id}</code></dd>
        </dl>
      </div>
      <div className="card">
        <h2>Status history</h2>
        <ol className="timeline">
          {history(e).map((s) => (
            <li key={s.label}><Badge status={s.tone}>{s.label}</Badge> <span>{formatDate(s.at)}</span>{s.note && <span className="small muted"> · {s.note}</span>}</li>
          ))}
        </ol>
        {now && <p className="small muted" data-testid="delivery-state"><strong>{now.label}.</strong> {now.text} Each attempt is listed below.</p>}
      </div>
      <div className="card">
        <h2>Delivery attempts</h2>
        {attempts.isPending && <Loading />}
        <ErrorBox error={attempts.error} />
        {attempts.data && attempts.data.data.length === 0 && <Empty title="No delivery attempt yet">The email is queued; the first attempt is made within seconds while the server runs.</Empty>}
        {attempts.data && attempts.data.data.length > 0 && (
          <div className="table-wrap"><table className="stacked">
            <thead><tr><th scope="col">#</th><th scope="col">When</th><th scope="col">Outcome</th><th scope="col">SMTP reply and server</th></tr></thead>
            <tbody>{attempts.data.data.map((a) => (
              <tr key={a.attempt}>
                <td data-label="Attempt ">{a.attempt}</td>
                <td>{formatDate(a.at)}{a.nextAttemptAt && <div className="small muted">retry {formatDate(a.nextAttemptAt)}</div>}</td>
                <td><Badge status={OUTCOME[a.outcome]?.tone ?? ''}>{OUTCOME[a.outcome]?.label ?? a.outcome}</Badge></td>
                <td className="reply"><code>{a.reply ?? '—'}</code>{a.host && <div className="small muted">from <code>{a.host}</code></div>}</td>
              </tr>
            ))}</tbody>
          </table></div>
        )}
        {attempts.data && !attempts.data.complete && <p className="small muted">This email had {attempts.data.attempts} attempts; replies of the earlier ones were not kept.</p>}
      </div>
      <div className="card">
        <h2>Opens and clicks</h2>
        {events.isPending && <Loading />}
        <ErrorBox error={events.error} />
        {events.data && opens.length === 0 && clicks.length === 0 && (
          <Empty title="Not opened or clicked yet">Opens and clicks are counted when the project's tracking is on (Settings) and the recipient loads images or follows a link.</Empty>
        )}
        {(opens.length > 0 || clicks.length > 0) && (
          <>
            <p className="small muted">{opens.length} open{opens.length === 1 ? '' : 's'} · {clicks.length} click{clicks.length === 1 ? '' : 's'}</p>
            <div className="table-wrap"><table className="stacked">
              <thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Link</th></tr></thead>
              <tbody>{[...opens, ...clicks].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt)).map((v) => (
                <tr key={v.id}>
                  <td>{formatDate(v.createdAt)}</td>
                  <td>{TYPE_LABELS[v.type]}{v.data.isFirstOpen === true || v.data.isFirstClick === true ? ' (first)' : ''}</td>
                  <td className="value">{typeof v.data.link === 'string' ? <code>{v.data.link}</code> : '—'}</td>
                </tr>
              ))}</tbody>
            </table></div>
          </>
        )}
        {reports.length > 0 && (
          <>
            <h3>Reports after delivery</h3>
            <ul>{reports.map((v) => <li key={v.id}>{TYPE_LABELS[v.type]} · {formatDate(v.createdAt)}{typeof v.data.reply === 'string' && <> · <code>{v.data.reply}</code></>}</li>)}</ul>
          </>
        )}
      </div>
      <div className="card">
        <div className="head"><h2>Headers</h2>{headers.data && <CopyButton text={headers.data.raw} label="Copy headers" />}</div>
        {headers.isPending && <Loading />}
        <ErrorBox error={headers.error} />
        {headers.data && (
          <>
            <p className="small muted">{headers.data.note}</p>
            <pre className="code">{headers.data.raw}</pre>
          </>
        )}
      </div>
    </div>
  )
}
