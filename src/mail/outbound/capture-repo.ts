/** The SQL of captured mail (`mail_capture`, MAILCTL_OUTBOUND=capture: capture.ts). */
import { and, desc, eq, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

export interface CapturedRow {
  emailId: string
  projectId: string
  from: string
  to: string
  subject: string
  raw: string
  envelopeFrom: string
}

/** Writes captured messages inside the outcome transaction. */
export async function insertCaptured(store: Store, db: Db, rows: CapturedRow[], now: Date): Promise<void> {
  if (!rows.length) return
  await db.insert(store.t.mailCapture).values(rows.map((r) => ({
    id: Bun.randomUUIDv7(),
    projectId: r.projectId,
    kind: 'outbound',
    fromAddress: r.from,
    toAddress: r.to,
    subject: r.subject,
    text: null,
    html: null,
    raw: r.raw,
    meta: { emailId: r.emailId, envelopeFrom: r.envelopeFrom },
    createdAt: now,
  })))
}

export interface CapturedMessage {
  id: string
  projectId: string | null
  kind: string
  from: string
  to: string
  subject: string
  emailId: string | null
  createdAt: Date
  raw?: string | null
}

/** Captured mail, newest first (all projects, or one), optionally with the raw message. */
export async function listCaptured(store: Store, opts: { projectId?: string; limit?: number; withRaw?: boolean } = {}): Promise<CapturedMessage[]> {
  const m = store.t.mailCapture
  const conds: SQL[] = []
  if (opts.projectId) conds.push(eq(m.projectId, opts.projectId))
  const rows = await store.db.select().from(m).where(conds.length ? and(...conds) : undefined)
    .orderBy(desc(m.createdAt), desc(m.id)).limit(opts.limit ?? 50)
  return rows.map((r) => ({
    id: r.id, projectId: r.projectId, kind: r.kind, from: r.fromAddress, to: r.toAddress, subject: r.subject,
    emailId: typeof r.meta?.emailId === 'string' ? r.meta.emailId : null, createdAt: r.createdAt,
    ...(opts.withRaw ? { raw: r.raw } : {}),
  }))
}
