/**
 * Emails for the tests of what comes back (tracking, bounces, complaints, webhooks, the activity feed):
 * queued through the sending pipeline's own verb (queueEmails), so they look exactly like sent mail.
 */
import { eq, sql } from 'drizzle-orm'
import { ctxFor } from '../../../src/deps'
import { upsertContact } from '../../../src/modules/contacts/service'
import { queueEmails } from '../../../src/modules/emails/service'
import type { EmailRow } from '../../../src/modules/emails/repo'
import { hydrateEmailEvents } from '../../../src/modules/events/repo'
import type { TestEnv } from '../../helpers/env'

export const rnd = () => Math.random().toString(36).slice(2, 8)

export interface TestEmailOptions {
  to?: string
  from?: string
  html?: string
  campaignId?: string | null
  subscribed?: boolean
  status?: string
}

/** Queues one email (contact upserted, subscribed by default) and optionally forces its status. */
export async function queueTestEmail(env: TestEnv, projectId: string, o: TestEmailOptions = {}): Promise<EmailRow> {
  const ctx = ctxFor(env.deps, projectId, { kind: 'cli' })
  const to = (o.to ?? `r.${rnd()}@dest.test`).toLowerCase()
  const row = await env.store.tx(async (db) => {
    const up = await upsertContact(ctx, { email: to, subscribed: o.subscribed ?? true }, { defaultSubscribed: true, db })
    const [r] = await queueEmails(ctx, db, [{
      contactId: up.contact.id, to: { email: to }, from: { email: o.from ?? 'hello@acme.test', name: 'Acme' }, subject: 'Welcome',
      html: o.html ?? '<html><body><p>Hi <a href="https://example.com/a?x=1&amp;y=2">there</a></p></body></html>', text: 'Hi',
      type: 'TRANSACTIONAL', sourceType: 'send', domainId: 'test-domain', listUnsubscribe: false, campaignId: o.campaignId ?? null,
    }])
    // Out of the outbound queue: these tests play the part of the mail that already left.
    await db.delete(env.store.t.outboundQueue).where(eq(env.store.t.outboundQueue.emailId, r.id))
    if (o.status) await db.update(env.store.t.emails).set({ status: o.status }).where(eq(env.store.t.emails.id, r.id))
    return r
  })
  return row
}

/** The email record with its rendered content (kept apart in email_contents). */
export async function emailRow(env: TestEnv, id: string): Promise<EmailRow & { html: string | null; text: string | null }> {
  const { emails: e, emailContents: c } = env.store.t
  const [row] = await env.store.db.select({ email: e, html: c.html, text: c.text }).from(e).innerJoin(c, eq(c.emailId, e.id)).where(eq(e.id, id))
  return { ...row.email, html: row.html, text: row.text }
}

/** The events of an email, oldest first, with their data as every reader sees it (the email's base put back). */
export async function eventsOf(env: TestEnv, emailId: string, name?: string) {
  const e = env.store.t.events
  const rows = await env.store.db.select().from(e).where(eq(e.emailId, emailId)).orderBy(e.createdAt, e.id)
  if (rows.length) await hydrateEmailEvents(env.store, rows[0].projectId, rows)
  return name ? rows.filter((r) => r.name === name) : rows
}

export async function contactEvents(env: TestEnv, contactId: string, name: string): Promise<number> {
  const rows = await env.store.rows<{ n: number | string }>(sql`SELECT COUNT(*) AS n FROM events WHERE contact_id = ${contactId} AND name = ${name}`)
  return Number(rows[0].n)
}

export async function contactOf(env: TestEnv, id: string) {
  const c = env.store.t.contacts
  const [row] = await env.store.db.select().from(c).where(eq(c.id, id))
  return row
}

export async function suppressionOf(env: TestEnv, projectId: string, email: string) {
  const s = env.store.t.suppressions
  const rows = await env.store.db.select().from(s).where(eq(s.projectId, projectId))
  return rows.find((r) => r.email === email.toLowerCase()) ?? null
}

/** The path of a public URL (the test app is called at http://localhost). */
export const pathOf = (url: string) => {
  const u = new URL(url)
  return u.pathname + u.search
}

/** Every URL in an href or src attribute of the HTML. */
export function urlsIn(html: string, attr: 'href' | 'src' | 'background'): string[] {
  return [...html.matchAll(new RegExp(`\\s${attr}="([^"]*)"`, 'gi'))].map((m) => m[1].replace(/&amp;/g, '&'))
}
