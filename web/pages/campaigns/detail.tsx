import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useRef, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { del, get, post, type Project } from '../../api'
import { Badge, ConfirmButton, ErrorBox, Field, fieldError, formatDate, Loading, onField, PageHead } from '../../components/ui'
import { useAudienceCount } from './audience'
import { CampaignForm } from './compose'
import { LocalTimeForm, localZone, ScheduleForm } from './schedule'
import { VariantResults } from './abtest'
import { CampaignResults, useCampaignStats } from './stats'
import { PreSendChecks, usePreSendChecks } from './checks'
import { type Campaign, type LocalSendAt, statusBadge } from './types'
import { formatDay, formatNumber } from '../../format'
import { t } from '../../i18n'

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
  if (c.error) return <><ErrorBox error={c.error} /><Link href="/campaigns">{t('campaign.all')}</Link></>
  const k = c.data
  const busy = send.isPending || cancel.isPending || unschedule.isPending
  return (
    <div>
      <PageHead title={k.name}>
        <button type="button" className="secondary" onClick={() => duplicate.mutate()} disabled={duplicate.isPending}>{t('campaign.duplicate')}</button>
        {k.status === 'SCHEDULED' && <button type="button" className="secondary" onClick={() => unschedule.mutate()} disabled={busy}>{t('campaign.unschedule')}</button>}
        {(k.status === 'SCHEDULED' || k.status === 'SENDING') && (
          <ConfirmButton label={t('campaign.cancel')} confirm={k.status === 'SENDING' ? t('campaign.cancelSending') : t('campaign.cancelScheduled')} onConfirm={() => cancel.mutate()} busy={busy} />
        )}
        {k.status !== 'SENDING' && <ConfirmButton label={t('ui.delete')} confirm={t('campaign.deleteConfirm')} onConfirm={() => remove.mutate()} busy={remove.isPending} />}
      </PageHead>
      <p className="small muted">
        <Link href="/campaigns">← {t('campaign.all')}</Link> · <Badge status={statusBadge(k.status)}>{t(`campaigns.status.${k.status}`)}</Badge>
        {k.status === 'SCHEDULED' && !k.sendAt && <> · {t('campaign.scheduledFor', { at: formatDate(k.scheduledFor), zone: localZone() })}</>}
        {k.sendAt && (k.status === 'SCHEDULED' || k.status === 'SENDING') && (
          <span data-testid="local-send"> · {t('campaign.localSend', { time: k.sendAt.localTime, date: formatDay(`${k.sendAt.date}T12:00:00Z`, 'UTC'), fallback: k.sendAt.fallbackTimeZone })} · {t(k.status === 'SCHEDULED' ? 'campaign.firstWave' : 'campaign.nextWave', { at: formatDate(k.nextWaveAt), zone: localZone() })}</span>
        )}
        {k.sentAt && <> · {t('campaign.sentOn', { at: formatDate(k.sentAt) })}</>}
        {k.status !== 'DRAFT' && k.status !== 'SCHEDULED' && <> · <Link href={`/campaigns/${id}/stats`}>{t('campaign.resultsPage')}</Link></>}
      </p>
      <ErrorBox error={duplicate.error ?? remove.error ?? cancel.error ?? unschedule.error} />
      {unschedule.isSuccess && k.status === 'DRAFT' && <div className="alert ok" role="status">{t('campaign.unscheduled')}</div>}
      {k.status === 'DRAFT' && (
        <section className="card" aria-labelledby="send-h">
          <h2 id="send-h">{t('campaign.send')}</h2>
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
  const note = warned ? ` ${t('campaign.checksNotMet', { count: warned })}` : ''
  return (
    <>
      <PreSendChecks checks={pre.checks} pending={pre.pending} />
      <SendNow project={project} campaign={campaign} onSend={() => onSend({ scheduledFor: null })} busy={busy} note={note} />
      <h3>{t('campaign.orSchedule')}</h3>
      <ScheduleForm busy={busy} onSchedule={(at) => {
        if (warned && !window.confirm(`${t('campaign.scheduleAnyway')}${note}`)) return
        onSend({ scheduledFor: at.toISOString() })
      }} />
      <h3>{t('campaign.orLocal')}</h3>
      {campaign.abTest
        ? <p className="small muted">{t('campaign.abNoLocal')}</p>
        : <LocalTimeForm busy={busy} onSend={(sendAt) => {
          if (warned && !window.confirm(`${t('campaign.scheduleAnyway')}${note}`)) return
          onSend({ sendAt })
        }} />}
    </>
  )
}

function SendNow({ project, campaign, onSend, busy, note = '' }: { project: Project; campaign: Campaign; onSend: () => void; busy: boolean; note?: string }) {
  const n = useAudienceCount(project, { type: campaign.type, audienceType: campaign.audienceType, segmentId: campaign.segmentId, audienceCondition: campaign.audienceCondition })
  const who = n.data ? t('campaign.recipients', { count: n.data.recipients }) : t('campaign.itsAudience')
  return (
    <div className="row">
      <ConfirmButton label={t('campaign.sendNow')} confirm={`${t('campaign.sendTo', { who })}${note}`} onConfirm={onSend} busy={busy} />
      <span className="muted small" aria-live="polite">
        {n.data ? t('campaign.recipientsNow', { recipients: formatNumber(n.data.recipients), unsubscribed: formatNumber(n.data.skippedUnsubscribed), suppressed: formatNumber(n.data.skippedSuppressed) }) : ''}
      </span>
    </div>
  )
}

function TestSend({ project, id }: { project: Project; id: string }) {
  const test = useMutation({ mutationFn: (email: string) => post<{ message: string }>(`/campaigns/${id}/test`, { email }, project.id) })
  // A flat validation error of this one-field form is about the address.
  const testError = onField(test.error, 'email')
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    test.mutate(String(new FormData(e.currentTarget).get('email') ?? '').trim())
  }
  return (
    <form className="card" onSubmit={submit} noValidate aria-labelledby="test-h">
      <h2 id="test-h">{t('campaign.testSend')}</h2>
      <ErrorBox error={testError} shown={['email']} />
      {test.isSuccess && <div className="alert ok" role="status">{test.data.message}</div>}
      <div className="row">
        <Field label={t('campaign.testTo')} name="email" type="email" placeholder={t('campaign.testPlaceholder')} hint={t('campaign.testHint')} error={fieldError(testError, 'email')} />
        <button type="submit" className="secondary" disabled={test.isPending}>{t('campaign.sendTest')}</button>
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
      <h2 id="live-h">{t('campaign.sendingNow')}</h2>
      <ErrorBox error={stats.error} />
      {!s ? <Loading /> : (
        <div className="stack">
          <div>
            <label htmlFor="live-audience">{total !== undefined ? t('campaign.handledOf', { n: formatNumber(s.totalRecipients), total: formatNumber(total) }) : t('campaign.handled', { n: formatNumber(s.totalRecipients) })}</label>
            <progress id="live-audience" max={Math.max(total ?? 0, s.totalRecipients, 1)} value={s.totalRecipients} />
          </div>
          <div>
            <label htmlFor="live-out">{t('campaign.mailOut', { out: formatNumber(out), queued: formatNumber(s.queued) })}</label>
            <progress id="live-out" max={Math.max(s.queued, 1)} value={out} />
          </div>
          <p data-testid="live-rate"><strong>{rate === null ? '…' : formatNumber(rate, 1)}</strong> {t('campaign.perSecond')}
            <span className="muted small"> · {t('campaign.liveCounts', { delivered: formatNumber(s.delivered), bounced: formatNumber(s.bounced), pending: formatNumber(s.pending), skipped: formatNumber(s.skippedUnsubscribed + s.skippedSuppressed) })}</span>
          </p>
        </div>
      )}
    </section>
  )
}
