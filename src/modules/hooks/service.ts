import type { Ctx } from '../../deps'
import { badRequest, conflict, invalidField, notFound } from '../../errors'
import { decodeTimeCursor, encodeTimeCursor } from '../cursor'
import { parseMoment } from '../moment'
import type { EventRow } from '../events/stream'
import { findByIds as findContactsByIds } from '../contacts/repo/contact'
import { forbiddenReason, isAllowedHost, parseAllowList, parseIp } from '../../net/address-guard'
import type {
  AttemptOut, CreateEndpointBody, DeliveryOut, DeliveryWithAttempts, EndpointOut, EndpointWithSecret, ListAttemptsQuery,
  ListDeliveriesQuery, UpdateEndpointBody,
} from './model'
import * as repo from './repo'
import { hookWakeups } from './schedule'
import { newSecret, openSecret, sealSecret, wants } from './signing'

/**
 * Customer webhooks: a project's endpoints, and the deliveries of its events to them. The event
 * consumer (consumer.ts) turns committed events into deliveries; the dispatcher (dispatcher.ts) sends
 * them. The verbs here serve the HTTP routes and the CLI.
 */

/** How long the secret before a rotation keeps signing. */
export const ROTATION_GRACE_MS = 24 * 3600_000

const iso = (d: Date | null) => (d ? d.toISOString() : null)

function toEndpoint(r: repo.EndpointRow): EndpointOut {
  return {
    id: r.id, url: r.url, description: r.description, eventTypes: r.eventTypes, enabled: r.enabled,
    disabledReason: r.disabledReason, disabledAt: iso(r.disabledAt), failingSince: iso(r.failingSince),
    previousSecretExpiresAt: iso(r.previousSecretExpiresAt), createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString(),
  }
}

function toDelivery(r: repo.DeliveryRow): DeliveryOut {
  return {
    id: r.id, endpointId: r.endpointId, eventId: r.eventId, eventType: r.eventType, status: r.status as DeliveryOut['status'],
    attempts: r.attempts, nextAttemptAt: r.status === 'pending' ? iso(r.nextAttemptAt) : null, lastStatus: r.lastStatus,
    lastError: r.lastError, deliveredAt: iso(r.deliveredAt), createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString(),
  }
}

function toAttempt(r: repo.AttemptRow): AttemptOut {
  return {
    id: r.id, deliveryId: r.deliveryId, attempt: r.attempt, outcome: r.outcome, status: r.status, latencyMs: r.latencyMs,
    response: r.response, createdAt: r.createdAt.toISOString(),
  }
}

/**
 * An endpoint URL's shape: http(s), a host, and not a refused address written as a literal (names are
 * checked when each delivery resolves them, src/net/safe-fetch.ts).
 */
function checkUrl(ctx: Ctx, raw: string): string {
  let u: URL
  try { u = new URL(raw) } catch { throw invalidField('url', 'Must be an absolute http or https URL', 'invalid_string', raw) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalidField('url', 'Must be an http or https URL', 'invalid_string', raw)
  if (!u.hostname) throw invalidField('url', 'The URL has no host', 'invalid_string', raw)
  const allow = parseAllowList(ctx.deps.config.webhookAllowHosts)
  const host = u.hostname.toLowerCase()
  if (!isAllowedHost(host, allow, u.port || (u.protocol === 'https:' ? 443 : 80))) {
    const reason = parseIp(host) ? forbiddenReason(host) : host === 'localhost' || host.endsWith('.localhost') ? 'loopback' : null
    if (reason) throw invalidField('url', `The URL's host is a ${reason} address, which webhooks may not call`, 'forbidden_address', raw)
  }
  return u.toString()
}

async function endpointOr404(ctx: Ctx, id: string): Promise<repo.EndpointRow> {
  const row = await repo.findEndpoint(ctx.store, ctx.projectId, id)
  if (!row) throw notFound('webhook endpoint')
  return row
}

/** POST /webhooks/endpoints: the answer carries the signing secret, shown this once. */
export async function createEndpoint(ctx: Ctx, body: CreateEndpointBody): Promise<EndpointWithSecret> {
  const url = checkUrl(ctx, body.url)
  const id = Bun.randomUUIDv7()
  const secret = newSecret()
  const row: repo.EndpointRow = {
    id, projectId: ctx.projectId, url, description: body.description ?? null, eventTypes: [...new Set(body.eventTypes ?? ['*'])],
    enabled: body.enabled ?? true, secret: sealSecret(ctx.deps.config, id, secret), previousSecret: null, previousSecretExpiresAt: null,
    failingSince: null, disabledReason: null, disabledAt: body.enabled === false ? ctx.now : null, createdAt: ctx.now, updatedAt: ctx.now,
  }
  await repo.insertEndpoint(ctx.store, row)
  return { ...toEndpoint(row), secret }
}

export async function listEndpoints(ctx: Ctx): Promise<{ data: EndpointOut[] }> {
  return { data: (await repo.listEndpoints(ctx.store, ctx.projectId)).map(toEndpoint) }
}

export async function getEndpoint(ctx: Ctx, id: string): Promise<EndpointOut> {
  return toEndpoint(await endpointOr404(ctx, id))
}

/**
 * PATCH /webhooks/endpoints/:id. Enabling clears the reason the service disabled it for and the run of
 * failures; disabling fails the deliveries still waiting (replay them after enabling it again).
 */
export async function updateEndpoint(ctx: Ctx, id: string, body: UpdateEndpointBody): Promise<EndpointOut> {
  const url = body.url === undefined ? undefined : checkUrl(ctx, body.url)
  const row = await ctx.store.tx(async (db) => {
    const before = await repo.findEndpoint(ctx.store, ctx.projectId, id, db)
    if (!before) throw notFound('webhook endpoint')
    const set: Partial<repo.EndpointRow> = { updatedAt: ctx.now }
    if (url !== undefined) set.url = url
    if (body.eventTypes !== undefined) set.eventTypes = [...new Set(body.eventTypes)]
    if (body.description !== undefined) set.description = body.description
    if (body.enabled === true && !before.enabled) Object.assign(set, { enabled: true, disabledReason: null, disabledAt: null, failingSince: null })
    if (body.enabled === false && before.enabled) {
      Object.assign(set, { enabled: false, disabledReason: null, disabledAt: ctx.now })
      await repo.failPending(ctx.store, db, id, 'The endpoint was disabled', ctx.now)
    }
    return repo.updateEndpoint(ctx.store, db, ctx.projectId, id, set)
  })
  if (!row) throw notFound('webhook endpoint')
  return toEndpoint(row)
}

/** DELETE /webhooks/endpoints/:id: with its deliveries and their log. */
export async function deleteEndpoint(ctx: Ctx, id: string): Promise<void> {
  if (!(await repo.deleteEndpoint(ctx.store, ctx.projectId, id))) throw notFound('webhook endpoint')
}

/**
 * POST /webhooks/endpoints/:id/rotate-secret: a new secret, shown once. The one it replaces keeps signing
 * (a second signature in the header) for 24 hours; a secret older than that is dropped.
 */
export async function rotateSecret(ctx: Ctx, id: string): Promise<{ secret: string; previousSecretExpiresAt: string }> {
  const secret = newSecret()
  const expires = new Date(ctx.now.getTime() + ROTATION_GRACE_MS)
  const row = await ctx.store.tx(async (db) => {
    const before = await repo.findEndpoint(ctx.store, ctx.projectId, id, db)
    if (!before) throw notFound('webhook endpoint')
    return repo.updateEndpoint(ctx.store, db, ctx.projectId, id, {
      secret: sealSecret(ctx.deps.config, id, secret), previousSecret: before.secret, previousSecretExpiresAt: expires, updatedAt: ctx.now,
    })
  })
  if (!row) throw notFound('webhook endpoint')
  return { secret, previousSecretExpiresAt: expires.toISOString() }
}

/** The secrets that sign a message to `e` at `now`: the current one, and the previous one during its grace period. */
export function signingSecrets(config: Ctx['deps']['config'], e: repo.EndpointRow, now: Date): string[] {
  const out = [openSecret(config, e.id, e.secret)]
  if (e.previousSecret && e.previousSecretExpiresAt && e.previousSecretExpiresAt > now) out.push(openSecret(config, e.id, e.previousSecret))
  return out
}

const clamp = (limit: number | undefined) => Math.min(limit ?? 20, 100)

/** GET /webhooks/endpoints/:id/deliveries: newest first, in cursor pages. */
export async function listDeliveries(ctx: Ctx, endpointId: string, q: ListDeliveriesQuery): Promise<{ data: DeliveryOut[]; cursor: string | null; hasMore: boolean }> {
  await endpointOr404(ctx, endpointId)
  const limit = clamp(q.limit)
  const after = q.cursor ? decodeTimeCursor(q.cursor) : null
  const rows = await repo.listDeliveries(ctx.store, ctx.projectId, endpointId, { status: q.status }, limit + 1, after && { at: new Date(after.at), id: after.id })
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  const hasMore = rows.length > limit
  return { data: page.map(toDelivery), cursor: hasMore && last ? encodeTimeCursor({ at: last.createdAt.getTime(), id: last.id }) : null, hasMore }
}

/** GET /webhooks/endpoints/:id/deliveries/:deliveryId: the delivery, its body and its attempts. */
export async function getDelivery(ctx: Ctx, endpointId: string, deliveryId: string): Promise<DeliveryWithAttempts> {
  const row = await repo.findDelivery(ctx.store, ctx.projectId, endpointId, deliveryId)
  if (!row) throw notFound('delivery')
  const attempts = await repo.listAttempts(ctx.store, ctx.projectId, endpointId, { deliveryId }, 100, null)
  return { ...toDelivery(row), body: row.body, attemptLog: attempts.map(toAttempt) }
}

/** GET /webhooks/endpoints/:id/attempts: the endpoint's delivery log, newest first. */
export async function listAttempts(ctx: Ctx, endpointId: string, q: ListAttemptsQuery): Promise<{ data: AttemptOut[]; cursor: string | null; hasMore: boolean }> {
  await endpointOr404(ctx, endpointId)
  const limit = clamp(q.limit)
  const after = q.cursor ? decodeTimeCursor(q.cursor) : null
  const rows = await repo.listAttempts(ctx.store, ctx.projectId, endpointId, {}, limit + 1, after && { at: new Date(after.at), id: after.id })
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  const hasMore = rows.length > limit
  return { data: page.map(toAttempt), cursor: hasMore && last ? encodeTimeCursor({ at: last.createdAt.getTime(), id: last.id }) : null, hasMore }
}

async function enabledOr409(ctx: Ctx, endpointId: string): Promise<void> {
  const e = await endpointOr404(ctx, endpointId)
  if (!e.enabled) throw conflict('The endpoint is disabled: enable it (PATCH enabled: true) before replaying', { endpointId, disabledReason: e.disabledReason })
}

/**
 * POST .../deliveries/:deliveryId/replay: the delivery is sent again now (same id, same body), with a
 * fresh retry window; 409 while an attempt of it is in flight or the endpoint is disabled.
 */
export async function replayDelivery(ctx: Ctx, endpointId: string, deliveryId: string): Promise<DeliveryOut> {
  await enabledOr409(ctx, endpointId)
  const existing = await repo.findDelivery(ctx.store, ctx.projectId, endpointId, deliveryId)
  if (!existing) throw notFound('delivery')
  const ids = await ctx.store.tx((db) => repo.requeue(ctx.store, db, ctx.projectId, endpointId, { ids: [deliveryId] }, ctx.now))
  if (!ids.length) throw conflict('An attempt of this delivery is in flight; try again when it ends', { deliveryId })
  wake(ctx)
  const row = await repo.findDelivery(ctx.store, ctx.projectId, endpointId, deliveryId)
  if (!row) throw notFound('delivery')
  return toDelivery(row)
}

/** POST /webhooks/endpoints/:id/replay: every failed delivery created since `since` is sent again. */
export async function replayFailed(ctx: Ctx, endpointId: string, sinceText: string): Promise<{ replayed: number; ids: string[] }> {
  const since = parseMoment('since', sinceText)
  if (!since) throw badRequest('since is required: every failed delivery created at or after it is tried again')
  await enabledOr409(ctx, endpointId)
  const ids = await ctx.store.tx((db) => repo.requeue(ctx.store, db, ctx.projectId, endpointId, { failedSince: since }, ctx.now))
  if (ids.length) wake(ctx)
  return { replayed: ids.length, ids }
}

/** Wakes the dispatchers: this process's at once, other nodes' through Redis. */
function wake(ctx: Ctx) {
  hookWakeups.notify({ redis: ctx.deps.redis, log: ctx.deps.log })
}

/** The JSON body of a delivery: `{type, timestamp, data}` and, for an event of a contact, `contact: {id, email}`. */
export function deliveryBody(e: EventRow, contact: { id: string; email: string | null } | null): string {
  return JSON.stringify({ type: e.name, timestamp: e.createdAt.toISOString(), data: e.data ?? {}, ...(contact ? { contact } : {}) })
}

/**
 * The event consumer's verb: one delivery per event and enabled endpoint that wants it, in one
 * transaction; an event seen again adds nothing (unique per endpoint and event). Returns how many were new.
 */
export async function createDeliveries(ctx: Ctx, events: EventRow[]): Promise<number> {
  if (!events.length || !(await repo.hasEnabledEndpoint(ctx.store, ctx.projectId))) return 0
  const endpoints = await repo.enabledEndpoints(ctx.store, ctx.projectId)
  if (!endpoints.length) return 0
  const wanted = events.map((e) => ({ e, to: endpoints.filter((ep) => wants(ep.eventTypes, e.name)) })).filter((w) => w.to.length)
  if (!wanted.length) return 0
  const contactIds = [...new Set(wanted.map((w) => w.e.contactId).filter((id): id is string => id !== null))]
  const contacts = new Map(contactIds.length ? (await findContactsByIds(ctx.store, ctx.store.db, ctx.projectId, contactIds)).map((c) => [c.id, c.email]) : [])
  const rows: repo.DeliveryRow[] = []
  for (const { e, to } of wanted) {
    const body = deliveryBody(e, e.contactId ? { id: e.contactId, email: contacts.get(e.contactId) ?? null } : null)
    for (const ep of to) {
      rows.push({
        id: `msg_${Bun.randomUUIDv7().replaceAll('-', '')}`, projectId: ctx.projectId, endpointId: ep.id, eventId: e.id, eventType: e.name, body,
        status: 'pending', attempts: 0, nextAttemptAt: ctx.now, lockedBy: null, lockedUntil: null, lastStatus: null, lastError: null,
        firstAttemptAt: null, deliveredAt: null, createdAt: ctx.now, updatedAt: ctx.now,
      })
    }
  }
  const n = await ctx.store.tx((db) => repo.insertDeliveries(ctx.store, db, rows))
  if (n) wake(ctx)
  return n
}
