import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { canManage, del, get, patch, post, type Project } from '../../api'
import { Badge, ConfirmButton, CopyButton, Empty, ErrorBox, Field, fieldError, formatDate, Loading, PageHead, withoutChanged } from '../../components/ui'
import { EventChoice, eventsText } from './events'
import { formatNumber } from '../../format'
import './webhooks.css'

/**
 * Customer webhooks: the project's endpoints, each with its events, its signing secret
 * (shown once, rotated with a day's overlap), and its delivery log with the attempts and replays. The API is
 * /webhooks/endpoints (src/modules/hooks); changes are for owners and admins, as the API enforces.
 */

export interface Endpoint {
  id: string; url: string; description: string | null; eventTypes: string[]; enabled: boolean
  disabledReason: string | null; disabledAt: string | null; failingSince: string | null; previousSecretExpiresAt: string | null
  createdAt: string; updatedAt: string
}
interface Delivery {
  id: string; endpointId: string; eventId: string; eventType: string; status: 'pending' | 'delivered' | 'failed'; attempts: number
  nextAttemptAt: string | null; lastStatus: number | null; lastError: string | null; deliveredAt: string | null; createdAt: string
}
interface Attempt { id: string; attempt: number; outcome: string; status: number | null; latencyMs: number; response: string | null; createdAt: string }
interface DeliveryDetail extends Delivery { body: string; attemptLog: Attempt[] }
interface Page<T> { data: T[]; cursor: string | null; hasMore: boolean }

const endpointsKey = (pid: string) => ['webhooks', pid] as const

/** What an endpoint is doing, in a word and a tone. */
function state(e: Endpoint): [string, string] {
  if (!e.enabled) return e.disabledReason ? ['failed', 'Turned off by mailctl'] : ['pending', 'Off']
  if (e.failingSince) return ['warning', 'Failing']
  return ['ok', 'On']
}

/** The answer a secret is shown in, once. */
function SecretOnce({ secret, note }: { secret: string; note?: string }) {
  return (
    <div className="alert warn" role="status">
      <p><strong>Copy the signing secret now.</strong> It is shown only once. Your server checks each message's <code>webhook-signature</code> header with it.</p>
      <div className="secret"><code data-testid="signing-secret">{secret}</code><CopyButton text={secret} label="Copy signing secret" /></div>
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
      <PageHead title="Webhooks">
        {manage && <button type="button" onClick={() => { setAdding((a) => !a); create.reset() }} aria-expanded={adding}>Add endpoint</button>}
      </PageHead>
      <p className="muted">mailctl posts this project's events to your endpoints as they happen, signed with each endpoint's secret (the Standard Webhooks format). A failed delivery is tried again for up to 3 days.</p>
      {create.data && (
        <>
          <SecretOnce secret={create.data.secret} />
          <p><button type="button" className="link" onClick={() => navigate(`/webhooks/${create.data.id}`)}>Open the new endpoint</button></p>
        </>
      )}
      {adding && <EndpointForm project={project} title="New endpoint" submitLabel="Add endpoint" busy={create.isPending} error={create.error} onSubmit={(b) => create.mutate(b)} onCancel={() => setAdding(false)} />}
      <div className="card">
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data?.data.length === 0 && (
          <Empty title="No endpoints yet">{manage ? 'Add one with “Add endpoint”: a URL of your server and the events it wants.' : 'An owner or admin of the project can add one.'}</Empty>
        )}
        {list.data && list.data.data.length > 0 && (
          <div className="table-wrap"><table className="stacked">
            <thead><tr><th scope="col">Endpoint</th><th scope="col">Events</th><th scope="col">Status</th><th scope="col">Added</th></tr></thead>
            <tbody>{list.data.data.map((e) => {
              const [tone, word] = state(e)
              return (
                <tr key={e.id}>
                  <td data-label="Endpoint: "><Link href={`/webhooks/${e.id}`} className="wh-url">{e.url}</Link>{e.description && <div className="small muted">{e.description}</div>}</td>
                  <td data-label="Events: ">{eventsText(e.eventTypes)}</td>
                  <td data-label="Status: "><Badge status={tone}>{word}</Badge></td>
                  <td data-label="Added: ">{formatDate(e.createdAt)}</td>
                </tr>
              )
            })}</tbody>
          </table></div>
        )}
      </div>
      {!manage && <p className="small muted">Only owners and admins add or change endpoints; you can read their delivery logs.</p>}
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
    if (events.length === 0) { setLocal('Choose at least one event, or every event.'); return }
    setLocal(null)
    const body: Record<string, unknown> = { url: String(f.get('url') ?? '').trim(), description: String(f.get('description') ?? '').trim() || null, eventTypes: events }
    if (initial) body.enabled = f.get('enabled') === 'on'
    onSubmit(body)
  }
  return (
    <form className="card" onSubmit={submit} noValidate onChange={(e) => { const t = e.target as EventTarget & { name?: string }; if (t.name) touch(t.name) }}>
      <h2>{title}</h2>
      <ErrorBox error={shown} shown={['url', 'description', 'eventTypes']} />
      <Field label="URL" name="url" type="url" required defaultValue={initial?.url} placeholder="https://example.com/webhooks/mailctl" autoFocus={!initial}
        hint="An http or https address of your server, reachable from the internet" error={fieldError(shown, 'url')} />
      <Field label="Description (optional)" name="description" defaultValue={initial?.description ?? ''} maxLength={500} error={fieldError(shown, 'description')} />
      <EventChoice project={project} value={events} onChange={(v) => { setEvents(v); setLocal(null); touch('eventTypes') }} error={local ?? fieldError(shown, 'eventTypes')} />
      {initial && (
        <div className="check">
          <input id="wh-enabled" name="enabled" type="checkbox" defaultChecked={initial.enabled} />
          <label htmlFor="wh-enabled">Send events to this endpoint</label>
        </div>
      )}
      <div className="row">
        <button type="submit" disabled={busy}>{busy ? 'Saving…' : submitLabel}</button>
        {onCancel && <button type="button" className="secondary" onClick={onCancel}>Cancel</button>}
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
  if (ep.error) return <><ErrorBox error={ep.error} /><Link href="/webhooks">All webhooks</Link></>
  const e = ep.data
  const [tone, word] = state(e)
  const overlap = e.previousSecretExpiresAt && new Date(e.previousSecretExpiresAt) > new Date() ? e.previousSecretExpiresAt : null
  return (
    <div>
      <PageHead title="Webhook endpoint"><Badge status={tone}>{word}</Badge></PageHead>
      <p className="small muted"><Link href="/webhooks">← All webhooks</Link> · <span className="wh-url">{e.url}</span></p>
      {e.disabledReason && (
        <div className="alert error" role="alert">mailctl turned this endpoint off: {e.disabledReason}. Fix your server, then tick “Send events to this endpoint” and save to start again.</div>
      )}
      {e.enabled && e.failingSince && (
        <div className="alert warn" role="status">Deliveries have failed since {formatDate(e.failingSince)}. They are tried again; after 5 days of failures mailctl turns the endpoint off.</div>
      )}
      {manage
        ? <EndpointForm key={e.updatedAt} project={project} initial={e} title="Endpoint" submitLabel="Save" busy={save.isPending} error={save.error} onSubmit={(b) => save.mutate(b)} />
        : <div className="card"><h2>Endpoint</h2><p>{e.description ?? <span className="muted">No description</span>}</p><p>Events: {eventsText(e.eventTypes)}</p></div>}
      {save.isSuccess && <div className="alert ok" role="status">Saved.</div>}
      <div className="card">
        <h2>Signing secret</h2>
        <p className="small muted">Every message is signed with the endpoint's secret. Rotating makes a new one; the old one keeps signing too for 24 hours, so your server can switch without missing a message.</p>
        {rotate.data && <SecretOnce secret={rotate.data.secret} note={`The previous secret also signs until ${formatDate(rotate.data.previousSecretExpiresAt)}.`} />}
        {!rotate.data && overlap && <p className="small">The previous secret also signs until {formatDate(overlap)}.</p>}
        <ErrorBox error={rotate.error} />
        {manage && <ConfirmButton label="Rotate secret" confirm="Make a new signing secret? Update your server within 24 hours." onConfirm={() => rotate.mutate()} busy={rotate.isPending} />}
      </div>
      <Deliveries project={project} endpoint={e} manage={manage} />
      {manage && (
        <div className="card">
          <h2>Delete the endpoint</h2>
          <p className="small muted">Its delivery log goes with it. Nothing more is sent to it.</p>
          <ErrorBox error={remove.error} />
          <ConfirmButton label="Delete endpoint" confirm="Delete this endpoint and its log?" onConfirm={() => remove.mutate()} busy={remove.isPending} />
        </div>
      )}
    </div>
  )
}

const STATUS_WORD: Record<Delivery['status'], [string, string]> = { pending: ['pending', 'Waiting'], delivered: ['ok', 'Delivered'], failed: ['failed', 'Failed'] }

/** The endpoint's deliveries, newest first, each with its attempts and a way to send it again. */
function Deliveries({ project, endpoint, manage }: { project: Project; endpoint: Endpoint; manage: boolean }) {
  const qc = useQueryClient()
  const [status, setStatus] = useState('')
  const [open, setOpen] = useState<string | null>(null)
  const base = `/webhooks/endpoints/${endpoint.id}`
  const list = useInfiniteQuery({
    queryKey: ['webhook-deliveries', project.id, endpoint.id, status],
    initialPageParam: '',
    queryFn: ({ pageParam }) => get<Page<Delivery>>(`${base}/deliveries?limit=25${status ? `&status=${status}` : ''}${pageParam ? `&cursor=${encodeURIComponent(pageParam)}` : ''}`, project.id),
    getNextPageParam: (last) => (last.hasMore && last.cursor ? last.cursor : undefined),
  })
  const refresh = () => qc.invalidateQueries({ queryKey: ['webhook-deliveries', project.id, endpoint.id] })
  const replay = useMutation({ mutationFn: (d: string) => post<Delivery>(`${base}/deliveries/${d}/replay`, {}, project.id), onSuccess: refresh })
  const rows = list.data?.pages.flatMap((p) => p.data) ?? []
  return (
    <section className="card" aria-labelledby="wh-log">
      <div className="head">
        <h2 id="wh-log">Deliveries</h2>
        <div className="row">
          <div className="field"><span><label htmlFor="wh-status">Status</label></span>
            <select id="wh-status" value={status} onChange={(e) => setStatus(e.target.value)}>
              <option value="">All</option><option value="pending">Waiting</option><option value="delivered">Delivered</option><option value="failed">Failed</option>
            </select>
          </div>
          <button type="button" className="secondary" onClick={refresh}>Refresh</button>
        </div>
      </div>
      {manage && <ReplayFailed project={project} endpoint={endpoint} onDone={refresh} />}
      <ErrorBox error={replay.error} />
      {replay.data && <div className="alert ok" role="status">The {replay.data.eventType} delivery is queued again.</div>}
      {list.isPending && <Loading />}
      <ErrorBox error={list.error} />
      {list.data && rows.length === 0 && <Empty title={status ? `No ${STATUS_WORD[status as Delivery['status']][1].toLowerCase()} deliveries` : 'No deliveries yet'}>{status ? 'Choose another status.' : 'Each event this endpoint receives is listed here once it happens.'}</Empty>}
      {rows.length > 0 && (
        <div className="table-wrap"><table className="stacked">
          <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
          <tbody>{rows.map((d) => {
            const [tone, word] = STATUS_WORD[d.status]
            return [
              <tr key={d.id}>
                <td data-label="Event: "><code>{d.eventType}</code></td>
                <td data-label="Status: "><Badge status={tone}>{word}</Badge>{d.status === 'pending' && d.nextAttemptAt && <div className="small muted">next try {formatDate(d.nextAttemptAt)}</div>}</td>
                <td data-label="Attempts: ">{d.attempts}</td>
                <td data-label="Last answer: ">{d.lastStatus ? `HTTP ${d.lastStatus}` : ''}{d.lastError && <div className="small muted wh-answer">{d.lastError}</div>}{!d.lastStatus && !d.lastError && <span className="muted">—</span>}</td>
                <td data-label="Created: ">{formatDate(d.createdAt)}</td>
                <td>
                  <div className="row">
                    <button type="button" className="secondary small" aria-expanded={open === d.id} onClick={() => setOpen(open === d.id ? null : d.id)}>
                      {open === d.id ? 'Hide' : 'Details'}<span className="sr-only"> of the {d.eventType} delivery</span>
                    </button>
                    {manage && d.status !== 'pending' && (
                      <button type="button" className="secondary small" disabled={replay.isPending || !endpoint.enabled} onClick={() => replay.mutate(d.id)}>
                        Send again<span className="sr-only"> the {d.eventType} delivery</span>
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
      {list.hasNextPage && <button type="button" className="secondary" onClick={() => list.fetchNextPage()} disabled={list.isFetchingNextPage}>Load more</button>}
      {manage && !endpoint.enabled && rows.length > 0 && <p className="small muted">Turn the endpoint on to send deliveries again.</p>}
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
      {replay.data && <div className="alert ok" role="status">{replay.data.replayed === 0 ? 'No failed delivery since then.' : `${replay.data.replayed} failed ${replay.data.replayed === 1 ? 'delivery is' : 'deliveries are'} queued again.`}</div>}
      <div className="row">
        <Field label="Failed since" name="since" type="datetime-local" defaultValue={local} required error={fieldError(replay.error, 'since')} />
        <button type="submit" className="secondary" disabled={replay.isPending || !endpoint.enabled}>Send failed deliveries again</button>
      </div>
    </form>
  )
}

const OUTCOME: Record<string, string> = {
  success: 'Delivered', http_error: 'Error answer', timeout: 'No answer in time', connect: 'Could not connect', blocked: 'Address not allowed',
  dns: 'Host name not found', redirect: 'Redirect (not followed)', invalid_url: 'Invalid URL',
}

/** One delivery: what was sent, and every attempt with its answer. */
function DeliveryView({ project, endpointId, id }: { project: Project; endpointId: string; id: string }) {
  const d = useQuery({ queryKey: ['webhook-delivery', project.id, endpointId, id], queryFn: () => get<DeliveryDetail>(`/webhooks/endpoints/${endpointId}/deliveries/${id}`, project.id) })
  if (d.isPending) return <Loading />
  if (d.error) return <ErrorBox error={d.error} />
  let body = d.data.body
  try { body = JSON.stringify(JSON.parse(body), null, 2) } catch { /* shown as it was sent */ }
  return (
    <div className="wh-delivery">
      <p className="small muted">Message id <code>{d.data.id}</code> (the <code>webhook-id</code> header, the same on every attempt)</p>
      <h3>Sent body</h3>
      <pre className="code">{body}</pre>
      <h3>Attempts</h3>
      {d.data.attemptLog.length === 0
        ? <p className="small muted">Not tried yet.</p>
        : (
          <table>
            <thead><tr><th scope="col">#</th><th scope="col">Result</th><th scope="col">Time taken</th><th scope="col">Answer</th><th scope="col">When</th></tr></thead>
            <tbody>{d.data.attemptLog.map((a) => (
              <tr key={a.id}>
                <td>{a.attempt}</td>
                <td><Badge status={a.outcome === 'success' ? 'ok' : 'failed'}>{OUTCOME[a.outcome] ?? a.outcome}</Badge>{a.status !== null && <span className="small"> HTTP {a.status}</span>}</td>
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
