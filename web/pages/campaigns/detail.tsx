import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useRef, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { del, get, post, type Project } from '../../api'
import { Badge, ConfirmButton, ErrorBox, Field, fieldError, formatDate, Loading, PageHead } from '../../components/ui'
import { useAudienceCount } from './audience'
import { CampaignForm } from './compose'
import { LocalTimeForm, localZone, ScheduleForm } from './schedule'
import { VariantResults } from './abtest'
import { CampaignResults, useCampaignStats } from './stats'
import { PreSendChecks, usePreSendChecks } from './checks'
import { type Campaign, type LocalSendAt, statusBadge } from './types'

/**
 * One campaign: its state and what can be done in it. DRAFT: send now, schedule, test, edit. SCHEDULED:
 * cancel, unschedule (back to DRAFT), test, edit. SENDING: the live view (polled every 1.5 s) and cancel.
 * SENT and CANCELLED: the results. Duplicate in every state; delete unless SENDING.
 */
export function CampaignPage({ project, id }: { project: Project; id: string }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const c = useQuery({
    queryKey: ['campaign', project.id, id],
    queryFn: () => get<Campaign>(`/campaigns/${id}`, project.id),
    // A sending campaign is followed closely; a scheduled one is looked at now and then, to see it start.
    refetchInterval: (q) => (q.state.data?.status === 'SENDING' ? 1_500 : q.state.data?.status === 'SCHEDULED' ? 10_000 : false),
    staleTime: 0,
  })
  const done = async (next?: Campaign) => {
    if (next) qc.setQueryData(['campaign', project.id, id], next)
    await qc.invalidateQueries({ queryKey: ['campaign', project.id, id] })
    await qc.invalidateQueries({ queryKey: ['campaigns', project.id] })
  }
  const send = useMutation({
    mutationFn: (body: { scheduledFor: string | null } | { sendAt: LocalSendAt }) => post(`/campaigns/${id}/send`, body, project.id),
    onSuccess: () => done(),
  })
  const cancel = useMutation({ mutationFn: () => post<Campaign>(`/campaigns/${id}/cancel`, {}, project.id), onSuccess: (n) => done(n) })
  // Back to DRAFT: cancel is final, this is how a scheduled campaign is taken back to be changed.
  const unschedule = useMutation({ mutationFn: () => post<Campaign>(`/campaigns/${id}/unschedule`, {}, project.id), onSuccess: (n) => done(n) })
  const duplicate = useMutation({
    mutationFn: () => post<Campaign>(`/campaigns/${id}/duplicate`, {}, project.id),
    onSuccess: async (n) => { await qc.invalidateQueries({ queryKey: ['campaigns', project.id] }); navigate(`/campaigns/${n.id}`) },
  })
  const remove = useMutation({
    mutationFn: () => del(`/campaigns/${id}`, project.id),
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: ['campaigns', project.id] }); navigate('/campaigns') },
  })
  if (c.isPending) return <Loading />
  if (c.error) return <><ErrorBox error={c.error} /><Link href="/campaigns">All campaigns</Link></>
  const k = c.data
  const busy = send.isPending || cancel.isPending || unschedule.isPending
  return (
    <div>
      <PageHead title={k.name}>
        <button type="button" className="secondary" onClick={() => duplicate.mutate()} disabled={duplicate.isPending}>Duplicate</button>
        {k.status === 'SCHEDULED' && <button type="button" className="secondary" onClick={() => unschedule.mutate()} disabled={busy}>Unschedule</button>}
        {(k.status === 'SCHEDULED' || k.status === 'SENDING') && (
          <ConfirmButton label="Cancel campaign" confirm={k.status === 'SENDING' ? 'Stop sending? Mail already queued still goes out.' : 'Cancel the scheduled send?'} onConfirm={() => cancel.mutate()} busy={busy} />
        )}
        {k.status !== 'SENDING' && <ConfirmButton label="Delete" confirm="Delete this campaign?" onConfirm={() => remove.mutate()} busy={remove.isPending} />}
      </PageHead>
      <p className="small muted">
        <Link href="/campaigns">← All campaigns</Link> · <Badge status={statusBadge(k.status)}>{k.status}</Badge>
        {k.status === 'SCHEDULED' && !k.sendAt && <> · scheduled for {formatDate(k.scheduledFor)} ({localZone()})</>}
        {k.sendAt && (k.status === 'SCHEDULED' || k.status === 'SENDING') && (
          <span data-testid="local-send"> · {k.sendAt.localTime} on {k.sendAt.date} in each recipient's time zone (else {k.sendAt.fallbackTimeZone}) · {k.status === 'SCHEDULED' ? 'first' : 'next'} wave {formatDate(k.nextWaveAt)} ({localZone()})</span>
        )}
        {k.sentAt && <> · sent {formatDate(k.sentAt)}</>}
        {k.status !== 'DRAFT' && k.status !== 'SCHEDULED' && <> · <Link href={`/campaigns/${id}/stats`}>Results page</Link></>}
      </p>
      <ErrorBox error={duplicate.error ?? remove.error ?? cancel.error ?? unschedule.error} />
      {unschedule.isSuccess && k.status === 'DRAFT' && <div className="alert ok" role="status">Unscheduled: the campaign is a draft again. Change it, then send or schedule it.</div>}
      {k.status === 'DRAFT' && (
        <section className="card" aria-labelledby="send-h">
          <h2 id="send-h">Send</h2>
          <ErrorBox error={send.error} />
          <SendSection project={project} campaign={k} onSend={(body) => send.mutate(body)} busy={busy} />
        </section>
      )}
      {k.status === 'SENDING' && <LiveView project={project} campaign={k} />}
      {k.abTest && k.status !== 'DRAFT' && k.status !== 'SCHEDULED' && <VariantResults project={project} campaign={k} every={k.status === 'SENDING' ? 5_000 : false} />}
      {(k.status === 'DRAFT' || k.status === 'SCHEDULED' || k.status === 'SENDING') && <TestSend project={project} id={id} />}
      {(k.status === 'DRAFT' || k.status === 'SCHEDULED') && <CampaignForm key={k.id} project={project} campaign={k} />}
      {(k.status === 'SENT' || k.status === 'CANCELLED') && <CampaignResults project={project} campaign={k} />}
    </div>
  )
}

/** The checks before sending (checks.tsx), then send now or schedule; with warnings, both ask first. */
function SendSection({ project, campaign, onSend, busy }: { project: Project; campaign: Campaign; onSend: (body: { scheduledFor: string | null } | { sendAt: LocalSendAt }) => void; busy: boolean }) {
  const pre = usePreSendChecks(project, campaign)
  const warned = pre.checks.length
  const note = warned ? ` ${warned} check${warned === 1 ? '' : 's'} above ${warned === 1 ? 'is' : 'are'} not met.` : ''
  return (
    <>
      <PreSendChecks checks={pre.checks} pending={pre.pending} />
      <SendNow project={project} campaign={campaign} onSend={() => onSend({ scheduledFor: null })} busy={busy} note={note} />
      <h3>Or schedule it</h3>
      <ScheduleForm busy={busy} onSchedule={(at) => {
        if (warned && !window.confirm(`Schedule it anyway?${note}`)) return
        onSend({ scheduledFor: at.toISOString() })
      }} />
      <h3>Or send it in each recipient's time zone</h3>
      {campaign.abTest
        ? <p className="small muted">An A/B test is sent at one time; remove the test to send in each recipient's time zone.</p>
        : <LocalTimeForm busy={busy} onSend={(sendAt) => {
          if (warned && !window.confirm(`Schedule it anyway?${note}`)) return
          onSend({ sendAt })
        }} />}
    </>
  )
}

function SendNow({ project, campaign, onSend, busy, note = '' }: { project: Project; campaign: Campaign; onSend: () => void; busy: boolean; note?: string }) {
  const n = useAudienceCount(project, { type: campaign.type, audienceType: campaign.audienceType, segmentId: campaign.segmentId, audienceCondition: campaign.audienceCondition })
  const who = n.data ? `${n.data.recipients.toLocaleString()} recipient${n.data.recipients === 1 ? '' : 's'}` : 'its audience'
  return (
    <div className="row">
      <ConfirmButton label="Send now" confirm={`Send to ${who} now?${note}`} onConfirm={onSend} busy={busy} />
      <span className="muted small" aria-live="polite">
        {n.data ? `${n.data.recipients.toLocaleString()} recipients now; ${n.data.skippedUnsubscribed.toLocaleString()} unsubscribed and ${n.data.skippedSuppressed.toLocaleString()} suppressed are skipped.` : ''}
      </span>
    </div>
  )
}

function TestSend({ project, id }: { project: Project; id: string }) {
  const test = useMutation({ mutationFn: (email: string) => post<{ message: string }>(`/campaigns/${id}/test`, { email }, project.id) })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    test.mutate(String(new FormData(e.currentTarget).get('email') ?? '').trim())
  }
  return (
    <form className="card" onSubmit={submit} noValidate aria-labelledby="test-h">
      <h2 id="test-h">Test send</h2>
      <ErrorBox error={test.error} shown={['email']} />
      {test.isSuccess && <div className="alert ok" role="status">{test.data.message}</div>}
      <div className="row">
        <Field label="Send a test to" name="email" type="email" placeholder="you@example.com" hint="Rendered with that contact's data; not counted in the results" error={fieldError(test.error, 'email')} />
        <button type="submit" className="secondary" disabled={test.isPending}>Send test</button>
      </div>
    </form>
  )
}

/** Progress of a SENDING campaign: contacts handled of the audience, mail out of mail queued, and the rate. */
function LiveView({ project, campaign }: { project: Project; campaign: Campaign }) {
  const stats = useCampaignStats(project, campaign.id, 1_500)
  const audience = useAudienceCount(project, { type: campaign.type, audienceType: campaign.audienceType, segmentId: campaign.segmentId, audienceCondition: campaign.audienceCondition })
  const samples = useRef<Array<{ t: number; out: number }>>([])
  const [rate, setRate] = useState<number | null>(null)
  const s = stats.data
  const out = s ? s.sent + s.bounced + s.failed : 0
  const at = stats.dataUpdatedAt
  // One sample per answer (also when the counts did not change: the rate then falls).
  useEffect(() => {
    if (!at) return
    const now = at
    const list = samples.current
    list.push({ t: now, out })
    // The rate over the last 10 seconds of samples.
    while (list.length > 2 && now - list[0].t > 10_000) list.shift()
    const first = list[0]
    setRate(now - first.t >= 1_000 ? ((out - first.out) * 1000) / (now - first.t) : null)
  }, [at, out])
  const total = audience.data?.matching
  return (
    <section className="card" aria-labelledby="live-h">
      <h2 id="live-h">Sending now</h2>
      <ErrorBox error={stats.error} />
      {!s ? <Loading /> : (
        <div className="stack">
          <div>
            <label htmlFor="live-audience">Audience handled: {s.totalRecipients.toLocaleString()}{total !== undefined ? ` of ${total.toLocaleString()}` : ''}</label>
            <progress id="live-audience" max={Math.max(total ?? 0, s.totalRecipients, 1)} value={s.totalRecipients} />
          </div>
          <div>
            <label htmlFor="live-out">Mail out: {out.toLocaleString()} of {s.queued.toLocaleString()} queued</label>
            <progress id="live-out" max={Math.max(s.queued, 1)} value={out} />
          </div>
          <p data-testid="live-rate"><strong>{rate === null ? '…' : rate.toLocaleString(undefined, { maximumFractionDigits: 1 })}</strong> messages per second
            <span className="muted small"> · {s.delivered.toLocaleString()} delivered, {s.bounced.toLocaleString()} bounced, {s.pending.toLocaleString()} on their way, {s.skippedUnsubscribed + s.skippedSuppressed} skipped</span>
          </p>
        </div>
      )}
    </section>
  )
}
