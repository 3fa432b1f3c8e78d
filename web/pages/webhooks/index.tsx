import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { type Answer, canManage, del, get, patch, post, type Project } from '../../api'
import { Badge, ConfirmButton, CopyButton, Empty, ErrorBox, Field, fieldError, formatDate, FormField, Loading, PageHead, withoutChanged } from '../../components/ui'
import { type MessageKey, t } from '../../i18n'
import { EventChoice, eventsText } from './events'
import { formatNumber } from '../../format'
import './webhooks.css'

/**
 * Customer webhooks: the project's endpoints, each with its events, its signing secret
 * (shown once, rotated with a day's overlap), and its delivery log with the attempts and replays. The API is
 * /webhooks/endpoints (src/modules/hooks); changes are for owners and admins, as the API enforces.
 */

export type Endpoint = Answer<'/webhooks/endpoints/{id}'>
type DeliveryPage = Answer<'/webhooks/endpoints/{id}/deliveries'>
type Delivery = DeliveryPage['data'][number]
type DeliveryDetail = Answer<'/webhooks/endpoints/{id}/deliveries/{deliveryId}'>

const endpointsKey = (pid: string) => ['webhooks', pid] as const

/** What an endpoint is doing, in a word and a tone. */
function state(e: Endpoint): [string, string] {
  if (!e.enabled) return e.disabledReason ? ['failed', t('wh.turnedOff')] : ['pending', t('wh.off')]
  if (e.failingSince) return ['warning', t('wh.failing')]
  return ['ok', t('wh.on')]
}

/** The answer a secret is shown in, once. */
function SecretOnce({ secret, note }: { secret: string; note?: string }) {
  return (
    <div className="alert warn" role="status">
      <p><strong>{t('wh.copyNow')}</strong>{t('wh.shownOnce1')}<code>webhook-signature</code>{t('wh.shownOnce2')}</p>
      <div className="secret"><code data-testid="signing-secret">{secret}</code><CopyButton text={secret} label={t('wh.copySecret')} /></div>
      {note && <p className="small">{note}</p>}
    </div>
  )
}

export function WebhooksPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const manage = canManage(project.role)
  const [adding, setAdding] = useState(false)
  const list = useQuery({ queryKey: endpointsKey(project.id), queryFn: () => get<{ data: Endpoint[] }>('/webhooks/endpoints', project.id) })
  const create = useMutation({
    mutationFn: (body: Record<string, unknown>) => post<Endpoint & { secret: string }>('/webhooks/endpoints', body, project.id),
    onSuccess: () => { setAdding(false); qc.invalidateQueries({ queryKey: endpointsKey(project.id) }) },
  })
  return (
    <div>
      <PageHead title={t('nav.webhooks')}>
        {manage && <button type="button" onClick={() => { setAdding((a) => !a); create.reset() }} aria-expanded={adding}>{t('wh.add')}</button>}
      </PageHead>
      <p className="muted">{t('wh.intro')}</p>
      {create.data && (
        <>
          <SecretOnce secret={create.data.secret} />
          <p><button type="button" className="link" onClick={() => navigate(`/webhooks/${create.data.id}`)}>{t('wh.openNew')}</button></p>
        </>
      )}
      {adding && <EndpointForm project={project} title={t('wh.newEndpoint')} submitLabel={t('wh.add')} busy={create.isPending} error={create.error} onSubmit={(b) => create.mutate(b)} onCancel={() => setAdding(false)} />}
      <div className="card">
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data?.data.length === 0 && (
          <Empty title={t('wh.none')}>{manage ? t('wh.noneManage') : t('wh.noneRead')}</Empty>
        )}
        {list.data && list.data.data.length > 0 && (
          <div className="table-wrap"><table className="stacked">
            <thead><tr><th scope="col">{t('wh.endpoint')}</th><th scope="col">{t('wh.events')}</th><th scope="col">{t('wh.status')}</th><th scope="col">{t('wh.added')}</th></tr></thead>
            <tbody>{list.data.data.map((e) => {
              const [tone, word] = state(e)
              return (
                <tr key={e.id}>
                  <td data-label={t('wh.endpointLabel')}><Link href={`/webhooks/${e.id}`} className="wh-url">{e.url}</Link>{e.description && <div className="small muted">{e.description}</div>}</td>
                  <td data-label={t('wh.eventsLabel')}>{eventsText(e.eventTypes)}</td>
                  <td data-label={t('wh.statusLabel')}><Badge status={tone}>{word}</Badge></td>
                  <td data-label={t('wh.addedLabel')}>{formatDate(e.createdAt)}</td>
                </tr>
              )
            })}</tbody>
          </table></div>
        )}
      </div>
      {!manage && <p className="small muted">{t('wh.onlyManagers')}</p>}
    </div>
  )
}

/** The form of an endpoint: URL, description, events (and, when editing, on or off). */
function EndpointForm({ project, initial, title, submitLabel, busy, error, onSubmit, onCancel }: {
  project: Project; initial?: Endpoint; title: string; submitLabel: string; busy: boolean; error: unknown
  onSubmit: (body: Record<string, unknown>) => void; onCancel?: () => void
}) {
  const [events, setEvents] = useState<string[]>(initial?.eventTypes ?? ['*'])
  const [local, setLocal] = useState<string | null>(null)
  // The fields changed since the last answer: their errors are gone (withoutChanged).
  const [changed, setChanged] = useState<ReadonlySet<string>>(new Set())
  const [answered, setAnswered] = useState<unknown>(null)
  if (answered !== error) { setAnswered(error); setChanged(new Set()) }
  const shown = withoutChanged(error, changed)
  const touch = (name: string) => { if (!changed.has(name)) setChanged(new Set([...changed, name])) }
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    if (events.length === 0) { setLocal(t('wh.chooseEvent')); return }
    setLocal(null)
    const body: Record<string, unknown> = { url: String(f.get('url') ?? '').trim(), description: String(f.get('description') ?? '').trim() || null, eventTypes: events }
    if (initial) body.enabled = f.get('enabled') === 'on'
    onSubmit(body)
  }
  return (
    <form className="card" onSubmit={submit} noValidate onChange={(e) => { const target = e.target as EventTarget & { name?: string }; if (target.name) touch(target.name) }}>
      <h2>{title}</h2>
      <ErrorBox error={shown} shown={['url', 'description', 'eventTypes']} />
      <Field label="URL" name="url" type="url" required defaultValue={initial?.url} placeholder="https://example.com/webhooks/mailctl" autoFocus={!initial}
        hint={t('wh.urlHint')} error={fieldError(shown, 'url')} />
      <Field label={t('wh.description')} name="description" defaultValue={initial?.description ?? ''} maxLength={500} error={fieldError(shown, 'description')} />
      <EventChoice project={project} value={events} onChange={(v) => { setEvents(v); setLocal(null); touch('eventTypes') }} error={local ?? fieldError(shown, 'eventTypes')} />
      {initial && (
        <div className="check">
          <input id="wh-enabled" name="enabled" type="checkbox" defaultChecked={initial.enabled} />
          <label htmlFor="wh-enabled">{t('wh.send')}</label>
        </div>
      )}
      <div className="row">
        <button type="submit" disabled={busy}>{busy ? t('ui.saving') : submitLabel}</button>
        {onCancel && <button type="button" className="secondary" onClick={onCancel}>{t('ui.cancel')}</button>}
      </div>
    </form>
  )
}

export function WebhookEndpointPage({ project, id }: { project: Project; id: string }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const manage = canManage(project.role)
  const key = ['webhook', project.id, id]
  const ep = useQuery({ queryKey: key, queryFn: () => get<Endpoint>(`/webhooks/endpoints/${id}`, project.id) })
  const changed = (e: Endpoint) => { qc.setQueryData(key, e); qc.invalidateQueries({ queryKey: endpointsKey(project.id) }) }
  const save = useMutation({ mutationFn: (b: Record<string, unknown>) => patch<Endpoint>(`/webhooks/endpoints/${id}`, b, project.id), onSuccess: changed })
  const rotate = useMutation({
    mutationFn: () => post<{ secret: string; previousSecretExpiresAt: string }>(`/webhooks/endpoints/${id}/rotate-secret`, {}, project.id),
    onSuccess: () => qc.invalidateQueries({ queryKey: key }),
  })
  const remove = useMutation({
    mutationFn: () => del(`/webhooks/endpoints/${id}`, project.id),
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: endpointsKey(project.id) }); navigate('/webhooks') },
  })
  if (ep.isPending) return <Loading />
  if (ep.error) return <><ErrorBox error={ep.error} /><Link href="/webhooks">{t('wh.all')}</Link></>
  const e = ep.data
  const [tone, word] = state(e)
  const overlap = e.previousSecretExpiresAt && new Date(e.previousSecretExpiresAt) > new Date() ? e.previousSecretExpiresAt : null
  return (
    <div>
      <PageHead title={t('title.webhook')}><Badge status={tone}>{word}</Badge></PageHead>
      <p className="small muted"><Link href="/webhooks">{t('wh.allBack')}</Link> · <span className="wh-url">{e.url}</span></p>
      {e.disabledReason && (
        <div className="alert error" role="alert">{t('wh.disabled', { reason: e.disabledReason })}</div>
      )}
      {e.enabled && e.failingSince && (
        <div className="alert warn" role="status">{t('wh.failingSince', { at: formatDate(e.failingSince) })}</div>
      )}
      {manage
        ? <EndpointForm key={e.updatedAt} project={project} initial={e} title={t('wh.endpoint')} submitLabel={t('ui.save')} busy={save.isPending} error={save.error} onSubmit={(b) => save.mutate(b)} />
        : <div className="card"><h2>{t('wh.endpoint')}</h2><p>{e.description ?? <span className="muted">{t('wh.noDescription')}</span>}</p><p>{t('wh.eventsList', { events: eventsText(e.eventTypes) })}</p></div>}
      {save.isSuccess && <div className="alert ok" role="status">{t('ui.saved')}</div>}
      <div className="card">
        <h2>{t('wh.secret')}</h2>
        <p className="small muted">{t('wh.secretText')}</p>
        {rotate.data && <SecretOnce secret={rotate.data.secret} note={t('wh.previous', { at: formatDate(rotate.data.previousSecretExpiresAt) })} />}
        {!rotate.data && overlap && <p className="small">{t('wh.previous', { at: formatDate(overlap) })}</p>}
        <ErrorBox error={rotate.error} />
        {manage && <ConfirmButton label={t('wh.rotate')} confirm={t('wh.rotateConfirm')} onConfirm={() => rotate.mutate()} busy={rotate.isPending} />}
      </div>
      <Deliveries project={project} endpoint={e} manage={manage} />
      {manage && (
        <div className="card">
          <h2>{t('wh.deleteTitle')}</h2>
          <p className="small muted">{t('wh.deleteText')}</p>
          <ErrorBox error={remove.error} />
          <ConfirmButton label={t('wh.delete')} confirm={t('wh.deleteConfirm')} onConfirm={() => remove.mutate()} busy={remove.isPending} />
        </div>
      )}
    </div>
  )
}

const STATUS_TONE: Record<Delivery['status'], string> = { pending: 'pending', delivered: 'ok', failed: 'failed' }

/** The endpoint's deliveries, newest first, each with its attempts and a way to send it again. */
function Deliveries({ project, endpoint, manage }: { project: Project; endpoint: Endpoint; manage: boolean }) {
  const qc = useQueryClient()
  const [status, setStatus] = useState('')
  const [open, setOpen] = useState<string | null>(null)
  const base = `/webhooks/endpoints/${endpoint.id}`
  const list = useInfiniteQuery({
    queryKey: ['webhook-deliveries', project.id, endpoint.id, status],
    initialPageParam: '',
    queryFn: ({ pageParam }) => get<DeliveryPage>(`${base}/deliveries?limit=25${status ? `&status=${status}` : ''}${pageParam ? `&cursor=${encodeURIComponent(pageParam)}` : ''}`, project.id),
    getNextPageParam: (last) => (last.hasMore && last.cursor ? last.cursor : undefined),
  })
  const refresh = () => qc.invalidateQueries({ queryKey: ['webhook-deliveries', project.id, endpoint.id] })
  const replay = useMutation({ mutationFn: (d: string) => post<Delivery>(`${base}/deliveries/${d}/replay`, {}, project.id), onSuccess: refresh })
  const rows = list.data?.pages.flatMap((p) => p.data) ?? []
  return (
    <section className="card" aria-labelledby="wh-log">
      <div className="head">
        <h2 id="wh-log">{t('wh.deliveries')}</h2>
        <div className="row">
          <FormField label={t('wh.status')} id="wh-status">
            {(c) => (
              <select {...c} value={status} onChange={(e) => setStatus(e.target.value)}>
                <option value="">{t('ui.all')}</option><option value="pending">{t('wh.d.pending')}</option><option value="delivered">{t('wh.d.delivered')}</option><option value="failed">{t('wh.d.failed')}</option>
              </select>
            )}
          </FormField>
          <button type="button" className="secondary" onClick={refresh}>{t('wh.refresh')}</button>
        </div>
      </div>
      {manage && <ReplayFailed project={project} endpoint={endpoint} onDone={refresh} />}
      <ErrorBox error={replay.error} />
      {replay.data && <div className="alert ok" role="status">{t('wh.queuedAgain', { type: replay.data.eventType })}</div>}
      {list.isPending && <Loading />}
      <ErrorBox error={list.error} />
      {list.data && rows.length === 0 && <Empty title={status ? t(`wh.noStatus.${status as Delivery['status']}`) : t('wh.noDeliveries')}>{status ? t('wh.otherStatus') : t('wh.noDeliveriesText')}</Empty>}
      {rows.length > 0 && (
        <div className="table-wrap"><table className="stacked">
          <thead><tr><th scope="col">{t('wh.event')}</th><th scope="col">{t('wh.status')}</th><th scope="col">{t('wh.attempts')}</th><th scope="col">{t('wh.lastAnswer')}</th><th scope="col">{t('wh.created')}</th><th scope="col"><span className="sr-only">{t('wh.actions')}</span></th></tr></thead>
          <tbody>{rows.map((d) => {
            const tone = STATUS_TONE[d.status]
            const word = t(`wh.d.${d.status}`)
            return [
              <tr key={d.id}>
                <td data-label={t('wh.eventLabel')}><code>{d.eventType}</code></td>
                <td data-label={t('wh.statusLabel')}><Badge status={tone}>{word}</Badge>{d.status === 'pending' && d.nextAttemptAt && <div className="small muted">{t('wh.nextTry', { at: formatDate(d.nextAttemptAt) })}</div>}</td>
                <td data-label={t('wh.attemptsLabel')}>{d.attempts}</td>
                <td data-label={t('wh.lastAnswerLabel')}>{d.lastStatus ? `HTTP ${d.lastStatus}` : ''}{d.lastError && <div className="small muted wh-answer">{d.lastError}</div>}{!d.lastStatus && !d.lastError && <span className="muted">—</span>}</td>
                <td data-label={t('wh.createdLabel')}>{formatDate(d.createdAt)}</td>
                <td>
                  <div className="row">
                    <button type="button" className="secondary small" aria-expanded={open === d.id} onClick={() => setOpen(open === d.id ? null : d.id)}>
                      {open === d.id ? t('wh.hide') : t('wh.details')}<span className="sr-only">{t('wh.ofDelivery', { type: d.eventType })}</span>
                    </button>
                    {manage && d.status !== 'pending' && (
                      <button type="button" className="secondary small" disabled={replay.isPending || !endpoint.enabled} onClick={() => replay.mutate(d.id)}>
                        {t('wh.sendAgain')}<span className="sr-only">{t('wh.theDelivery', { type: d.eventType })}</span>
                      </button>
                    )}
                  </div>
                </td>
              </tr>,
              open === d.id && <tr key={`${d.id}-detail`} className="wh-detail"><td colSpan={6}><DeliveryView project={project} endpointId={endpoint.id} id={d.id} /></td></tr>,
            ]
          })}</tbody>
        </table></div>
      )}
      {list.hasNextPage && <button type="button" className="secondary" onClick={() => list.fetchNextPage()} disabled={list.isFetchingNextPage}>{t('wh.loadMore')}</button>}
      {manage && !endpoint.enabled && rows.length > 0 && <p className="small muted">{t('wh.turnOn')}</p>}
    </section>
  )
}

/** Sends again every failed delivery since a time (default: a day ago). */
function ReplayFailed({ project, endpoint, onDone }: { project: Project; endpoint: Endpoint; onDone: () => void }) {
  const dayAgo = new Date(Date.now() - 86_400_000)
  const local = new Date(dayAgo.getTime() - dayAgo.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
  const replay = useMutation({
    mutationFn: (since: string) => post<{ replayed: number }>(`/webhooks/endpoints/${endpoint.id}/replay`, { since }, project.id),
    onSuccess: onDone,
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const v = String(new FormData(e.currentTarget).get('since') ?? '')
    const at = new Date(v)
    replay.mutate(Number.isNaN(at.getTime()) ? v : at.toISOString())
  }
  return (
    <form className="wh-replay" onSubmit={submit} noValidate>
      <ErrorBox error={replay.error} shown={['since']} />
      {replay.data && <div className="alert ok" role="status">{replay.data.replayed === 0 ? t('wh.noFailed') : t('wh.replayed', { count: replay.data.replayed })}</div>}
      <div className="row">
        <Field label={t('wh.failedSince')} name="since" type="datetime-local" defaultValue={local} required error={fieldError(replay.error, 'since')} />
        <button type="submit" className="secondary" disabled={replay.isPending || !endpoint.enabled}>{t('wh.replay')}</button>
      </div>
    </form>
  )
}

const OUTCOMES = new Set(['success', 'http_error', 'timeout', 'connect', 'blocked', 'dns', 'redirect', 'invalid_url'])
const outcomeLabel = (o: string) => (OUTCOMES.has(o) ? t(`wh.o.${o}` as MessageKey) : o)

/** One delivery: what was sent, and every attempt with its answer. */
function DeliveryView({ project, endpointId, id }: { project: Project; endpointId: string; id: string }) {
  const d = useQuery({ queryKey: ['webhook-delivery', project.id, endpointId, id], queryFn: () => get<DeliveryDetail>(`/webhooks/endpoints/${endpointId}/deliveries/${id}`, project.id) })
  if (d.isPending) return <Loading />
  if (d.error) return <ErrorBox error={d.error} />
  let body = d.data.body
  try { body = JSON.stringify(JSON.parse(body), null, 2) } catch { /* shown as it was sent */ }
  return (
    <div className="wh-delivery">
      <p className="small muted">{t('wh.messageId1')}<code>{d.data.id}</code>{t('wh.messageId2')}<code>webhook-id</code>{t('wh.messageId3')}</p>
      <h3>{t('wh.sentBody')}</h3>
      <pre className="code">{body}</pre>
      <h3>{t('wh.attemptsTitle')}</h3>
      {d.data.attemptLog.length === 0
        ? <p className="small muted">{t('wh.notTried')}</p>
        : (
          <table>
            <thead><tr><th scope="col">#</th><th scope="col">{t('wh.result')}</th><th scope="col">{t('wh.timeTaken')}</th><th scope="col">{t('wh.answer')}</th><th scope="col">{t('wh.when')}</th></tr></thead>
            <tbody>{d.data.attemptLog.map((a) => (
              <tr key={a.id}>
                <td>{a.attempt}</td>
                <td><Badge status={a.outcome === 'success' ? 'ok' : 'failed'}>{outcomeLabel(a.outcome)}</Badge>{a.status !== null && <span className="small"> HTTP {a.status}</span>}</td>
                <td>{formatNumber(a.latencyMs)} ms</td>
                <td className="wh-answer">{a.response ?? <span className="muted">—</span>}</td>
                <td>{formatDate(a.createdAt)}</td>
              </tr>
            ))}</tbody>
          </table>
        )}
    </div>
  )
}
