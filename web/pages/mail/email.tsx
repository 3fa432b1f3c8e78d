import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { Link } from 'wouter'
import { get, type Project } from '../../api'
import { Badge, CopyButton, Empty, ErrorBox, formatDate, Loading, PageHead } from '../../components/ui'
import { type ActivityPage, type Attempts, type EmailDetail as EmailDetailRecord, type EmailRecord, type EventItem, type Headers, statusLabel, statusTone, typeLabel } from './types'
import { type MessageKey, t } from '../../i18n'

/** The moments of an email's record, oldest first: its status history. */
function history(e: EmailRecord): Array<{ label: string; at: string; tone: string; note?: string }> {
  const steps: Array<{ label: string; at: string | null; tone: string; note?: string }> = [
    { label: t('em.queued'), at: e.createdAt, tone: '' },
    { label: t('em.sent'), at: e.sentAt, tone: 'ok', note: e.deliveredTo && !e.deliveredAt ? t('em.acceptedBy', { host: e.deliveredTo }) : undefined },
    { label: t('em.delivered'), at: e.deliveredAt, tone: 'ok', note: e.deliveredTo ? t('em.to', { to: e.deliveredTo }) : undefined },
    { label: t('em.firstOpened'), at: e.openedAt, tone: 'ok' },
    { label: t('em.firstClicked'), at: e.clickedAt, tone: 'ok' },
    { label: e.bounceType ? t('em.bouncedType', { type: e.bounceType }) : t('em.bounced'), at: e.bouncedAt, tone: 'failed' },
    { label: t('em.complaint'), at: e.complainedAt, tone: 'failed' },
    { label: t('em.failed'), at: e.failedAt, tone: 'failed' },
  ]
  return steps.filter((s): s is { label: string; at: string; tone: string; note?: string } => s.at !== null)
    .sort((a, b) => Date.parse(a.at) - Date.parse(b.at))
}

/** What an email on its way is doing now (GET /emails/:id, deliveryState); nothing once it is done. */
function deliveryNote(e: EmailDetailRecord): { label: string; text: string } | null {
  const at = e.nextAttemptAt ? formatDate(e.nextAttemptAt) : null
  if (e.deliveryState === 'WAITING_RETRY') return { label: t('em.waiting'), text: at ? t('em.deferredAt', { at }) : t('em.deferredNow') }
  if (e.deliveryState === 'SENDING') return { label: t('em.sending'), text: t('em.underWay') }
  if (e.deliveryState === 'QUEUED') return { label: t('em.queued'), text: at ? t('em.queuedAt', { at }) : t('em.queuedSoon') }
  return null
}

const OUTCOME: Record<string, { tone: string }> = {
  deferred: { tone: 'pending' }, accepted: { tone: 'ok' }, captured: { tone: 'ok' }, bounced: { tone: 'failed' }, failed: { tone: 'failed' },
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
  if (email.error) return <><ErrorBox error={email.error} /><Link href="/activity">{t('em.back')}</Link></>
  const e = email.data
  const evs = (events.data?.data ?? []).filter((i): i is EventItem => i.kind === 'event')
  const opens = evs.filter((v) => v.type === 'email.open')
  const clicks = evs.filter((v) => v.type === 'email.click')
  const reports = evs.filter((v) => v.type === 'email.bounce' || v.type === 'email.complaint')
  const now = deliveryNote(e)
  return (
    <div>
      <PageHead title={e.subject || t('act.noSubject')}>
        <Badge status={statusTone(e.status)}>{statusLabel(e.status)}</Badge>
        {now && <Badge status="pending">{now.label}</Badge>}
      </PageHead>
      <p className="small muted"><Link href="/activity">{t('em.back')}</Link> · {e.sourceType} · {e.type.toLowerCase()}</p>
      <div className="card">
        <h2>{t('em.message')}</h2>
        <dl className="facts">
          <dt>{t('em.from')}</dt><dd>{e.fromName ? `${e.fromName} <${e.from}>` : e.from}</dd>
          <dt>{t('em.toLabel')}</dt><dd>{e.contactId ? <Link href={`/contacts/${e.contactId}`}>{e.toName ? `${e.toName} <${e.to}>` : e.to}</Link> : e.to}</dd>
          {e.replyTo && <><dt>{t('em.replyTo')}</dt><dd>{e.replyTo}</dd></>}
          <dt>{t('em.messageId')}</dt><dd><code>{e.messageId}</code></dd>
          <dt>{t('em.id')}</dt><dd><code>{e.id}</code></dd>
        </dl>
      </div>
      <div className="card">
        <h2>{t('em.history')}</h2>
        <ol className="timeline">
          {history(e).map((s) => (
            <li key={s.label}><Badge status={s.tone}>{s.label}</Badge> <span>{formatDate(s.at)}</span>{s.note && <span className="small muted"> · {s.note}</span>}</li>
          ))}
        </ol>
        {now && <p className="small muted" data-testid="delivery-state"><strong>{now.label}.</strong> {now.text}{t('em.eachBelow')}</p>}
      </div>
      <div className="card">
        <h2>{t('em.attempts')}</h2>
        {attempts.isPending && <Loading />}
        <ErrorBox error={attempts.error} />
        {attempts.data && attempts.data.data.length === 0 && <Empty title={t('em.noAttempt')}>{t('em.noAttemptText')}</Empty>}
        {attempts.data && attempts.data.data.length > 0 && (
          <div className="table-wrap"><table className="stacked">
            <thead><tr><th scope="col">#</th><th scope="col">{t('em.when')}</th><th scope="col">{t('em.outcome')}</th><th scope="col">{t('em.reply')}</th></tr></thead>
            <tbody>{attempts.data.data.map((a) => (
              <tr key={a.attempt}>
                <td data-label={t('em.attempt')}>{a.attempt}</td>
                <td>{formatDate(a.at)}{a.nextAttemptAt && <div className="small muted">{t('em.retry', { at: formatDate(a.nextAttemptAt) })}</div>}</td>
                <td><Badge status={OUTCOME[a.outcome]?.tone ?? ''}>{OUTCOME[a.outcome] ? t(`em.outcome.${a.outcome}` as MessageKey) : a.outcome}</Badge></td>
                <td className="reply"><code>{a.reply ?? '—'}</code>{a.host && <div className="small muted">{t('em.fromHost')}<code>{a.host}</code></div>}</td>
              </tr>
            ))}</tbody>
          </table></div>
        )}
        {attempts.data && !attempts.data.complete && <p className="small muted">{t('em.earlier', { n: attempts.data.attempts })}</p>}
      </div>
      <div className="card">
        <h2>{t('em.opensClicks')}</h2>
        {events.isPending && <Loading />}
        <ErrorBox error={events.error} />
        {events.data && opens.length === 0 && clicks.length === 0 && (
          <Empty title={t('em.notOpened')}>{t('em.notOpenedText')}</Empty>
        )}
        {(opens.length > 0 || clicks.length > 0) && (
          <>
            <p className="small muted">{t('em.opens', { count: opens.length })} · {t('em.clicks', { count: clicks.length })}</p>
            <div className="table-wrap"><table className="stacked">
              <thead><tr><th scope="col">{t('em.when')}</th><th scope="col">{t('em.what')}</th><th scope="col">{t('em.link')}</th></tr></thead>
              <tbody>{[...opens, ...clicks].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt)).map((v) => (
                <tr key={v.id}>
                  <td>{formatDate(v.createdAt)}</td>
                  <td>{typeLabel(v.type)}{v.data.isFirstOpen === true || v.data.isFirstClick === true ? t('em.first') : ''}</td>
                  <td className="value">{typeof v.data.link === 'string' ? <code>{v.data.link}</code> : '—'}</td>
                </tr>
              ))}</tbody>
            </table></div>
          </>
        )}
        {reports.length > 0 && (
          <>
            <h3>{t('em.reports')}</h3>
            <ul>{reports.map((v) => <li key={v.id}>{typeLabel(v.type)} · {formatDate(v.createdAt)}{typeof v.data.reply === 'string' && <> · <code>{v.data.reply}</code></>}</li>)}</ul>
          </>
        )}
      </div>
      <div className="card">
        <div className="head"><h2>{t('em.headers')}</h2>{headers.data && <CopyButton text={headers.data.raw} label={t('em.copyHeaders')} />}</div>
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
