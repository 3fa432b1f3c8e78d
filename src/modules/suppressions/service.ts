import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import { notFound } from '../../errors'
import { invalidCursor } from '../cursor'
import { cutText, isStorableText, isStorableTime } from '../../storable'
import type { AddSuppressionBody, ListSuppressionsQuery, SuppressionReason } from './model'
import * as repo from './repo'

/**
 * The suppression list of a project: hard bounces, complaints and manual entries. Sending skips these
 * addresses (the contact's subscription flag is left alone: suppression is about deliverability, the
 * flag about consent). Removing an entry makes the address sendable again.
 */

export interface Suppression {
  email: string
  reason: SuppressionReason
  emailId: string | null
  detail: string | null
  createdAt: string
}

const norm = (e: string) => e.trim().toLowerCase()

function toSuppression(r: repo.SuppressionRow): Suppression {
  return { email: r.email, reason: r.reason as SuppressionReason, emailId: r.emailId, detail: r.detail, createdAt: r.createdAt.toISOString() }
}

/** Which of `emails` (normalised) are suppressed, with their entries; read inside `db`'s transaction. */
export async function suppressedAmong(ctx: Ctx, db: Db, emails: string[]): Promise<Map<string, Suppression>> {
  const rows = await repo.findAmong(ctx.store, db, ctx.projectId, [...new Set(emails)])
  return new Map(rows.map((r) => [r.email, toSuppression(r)]))
}

/**
 * Suppresses an address inside the caller's transaction (a hard bounce, a complaint); an address
 * already on the list keeps its first entry. True when added.
 */
export async function suppress(ctx: Ctx, db: Db, input: { email: string; reason: SuppressionReason; emailId?: string | null; detail?: string | null }): Promise<boolean> {
  return repo.insertIfAbsent(ctx.store, db, {
    projectId: ctx.projectId, email: norm(input.email), reason: input.reason, emailId: input.emailId ?? null,
    detail: input.detail === undefined || input.detail === null ? null : cutText(input.detail, 2000), createdAt: ctx.now,
  })
}

/** POST /suppressions: adds a manual entry; an existing entry is returned unchanged. */
export async function addSuppression(ctx: Ctx, body: AddSuppressionBody): Promise<Suppression> {
  const email = norm(body.email)
  await ctx.store.tx((db) => suppress(ctx, db, { email, reason: 'manual', detail: body.note ?? null }))
  const row = await repo.find(ctx.store, ctx.projectId, email)
  if (!row) throw notFound('suppression')
  return toSuppression(row)
}

export async function getSuppression(ctx: Ctx, email: string): Promise<Suppression> {
  const row = await repo.find(ctx.store, ctx.projectId, norm(email))
  if (!row) throw notFound('suppression')
  return toSuppression(row)
}

/** DELETE /suppressions/:email: the address can be sent to again. 404 when it is not on the list. */
export async function removeSuppression(ctx: Ctx, email: string): Promise<void> {
  const removed = await ctx.store.tx((db) => repo.remove(ctx.store, db, ctx.projectId, norm(email)))
  if (!removed) throw notFound('suppression')
}

function encodeCursor(r: repo.SuppressionRow): string {
  return Buffer.from(JSON.stringify([r.createdAt.getTime(), r.email])).toString('base64url')
}

function decodeCursor(c: string): { createdAt: Date; email: string } {
  try {
    const [ms, email] = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as [unknown, unknown]
    // As decodeTimeCursor: a made-up key the stores cannot hold is refused, not queried.
    if (typeof ms === 'number' && isStorableTime(ms) && typeof email === 'string' && isStorableText(email)) return { createdAt: new Date(ms), email }
  } catch { /* fall through */ }
  throw invalidCursor()
}

/** GET /suppressions: newest first, cursor pages (docs/decisions.md, Lists and pages). */
export async function listSuppressions(ctx: Ctx, q: ListSuppressionsQuery) {
  const limit = Math.min(100, Math.max(1, Math.trunc(Number(q.limit ?? 20)) || 20))
  const filter = { reason: q.reason, search: q.search?.trim() || undefined }
  const after = q.cursor ? decodeCursor(q.cursor) : null
  const rows = await repo.list(ctx.store, ctx.projectId, filter, limit + 1, after)
  const page = rows.slice(0, limit)
  const hasMore = rows.length > limit
  return {
    data: page.map(toSuppression),
    cursor: hasMore ? encodeCursor(page[page.length - 1]) : null,
    hasMore,
    total: after ? 0 : await repo.total(ctx.store, ctx.projectId, filter),
  }
}
