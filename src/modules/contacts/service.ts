import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import { appendEvents, notifyEvents, type EventRow, type NewEvent } from '../events/stream'
import { applyDataRules, normalizeEmail, type ContactData } from './data'
import * as repo from './repo'
import type { ContactRow } from './repo'

export type { ContactRow } from './repo'

export interface UpsertInput {
  email: string
  /** Given: the contact's state becomes this (emitting an event when it changes). Omitted: new contacts get `defaultSubscribed`, existing keep theirs. */
  subscribed?: boolean
  data?: ContactData | null
}

export interface UpsertOptions {
  /** The state of a contact created without `subscribed` (true for POST /contacts, track and send). */
  defaultSubscribed: boolean
  /** Run inside this transaction; the caller then commits and calls `notifyEvents(ctx, result.events)`. */
  db?: Db
}

export interface UpsertResult {
  contact: ContactRow
  isNew: boolean
  /** True when the email matched an existing contact. */
  isUpdate: boolean
  /** The stored data plus this request's `{value, persistent: false}` values: what templates see. */
  templateData: ContactData
  /** contact.subscribed / contact.unsubscribed rows appended in the transaction (at most one). */
  events: EventRow[]
}

export function subscriptionEvent(contactId: string, subscribed: boolean): NewEvent {
  return { contactId, name: subscribed ? 'contact.subscribed' : 'contact.unsubscribed', data: { subscribed } }
}

async function upsertIn(ctx: Ctx, db: Db, input: UpsertInput, opts: UpsertOptions): Promise<UpsertResult> {
  const email = normalizeEmail(input.email)
  const { store, projectId } = ctx
  let existing = await repo.findByEmailForUpdate(store, db, projectId, email)
  if (!existing) {
    const patch = applyDataRules({}, input.data)
    const now = new Date()
    const row: ContactRow = {
      id: Bun.randomUUIDv7(), projectId, email, subscribed: input.subscribed ?? opts.defaultSubscribed,
      data: patch.data, createdAt: now, updatedAt: now,
    }
    const inserted = await repo.insertIfAbsent(store, db, row)
    if (inserted) return { contact: inserted, isNew: true, isUpdate: false, templateData: patch.templateData, events: [] }
    // Another transaction created it between our read and insert (PostgreSQL): update it instead.
    existing = await repo.findByEmailForUpdate(store, db, projectId, email)
    if (!existing) throw new Error(`contact ${email} vanished during upsert`)
  }
  const patch = applyDataRules(existing.data ?? {}, input.data)
  const flip = input.subscribed !== undefined && input.subscribed !== existing.subscribed
  if (!patch.changed && !flip) return { contact: existing, isNew: false, isUpdate: true, templateData: patch.templateData, events: [] }
  const set: Parameters<typeof repo.updateById>[4] = { updatedAt: new Date() }
  if (patch.changed) set.data = patch.data
  if (flip) set.subscribed = input.subscribed
  const contact = (await repo.updateById(store, db, projectId, existing.id, set)) ?? { ...existing, ...set }
  const events = flip ? await appendEvents(ctx, db, [subscriptionEvent(existing.id, input.subscribed!)]) : []
  return { contact, isNew: false, isUpdate: true, templateData: patch.templateData, events }
}

/**
 * Creates or updates the contact of `input.email` (trimmed, lower-cased) by the five data rules, and
 * emits contact.subscribed / contact.unsubscribed once per real change of state. Concurrency-safe:
 * two upserts of one new email settle on the unique (project, email) index.
 *
 * With `opts.db` it runs inside the caller's transaction and leaves `notifyEvents` to the caller;
 * otherwise it opens its own transaction and notifies after commit.
 */
export async function upsertContact(ctx: Ctx, input: UpsertInput, opts: UpsertOptions): Promise<UpsertResult> {
  if (opts.db) return upsertIn(ctx, opts.db, input, opts)
  const result = await ctx.store.tx((db) => upsertIn(ctx, db, input, opts))
  await notifyEvents(ctx, result.events)
  return result
}
