/** The only SQL of TLS reporting: the per-day session counts (`tls_report_counts`). */
import { and, asc, eq, isNull, lt, sql } from 'drizzle-orm'
import type { Store } from '../../db/client'

export interface CountRow { day: string; domain: string; policyType: string; policy: string; mxHost: string; result: string; sessions: number; failedAt?: Date | null }

/** Adds session counts, summed with what is there (other nodes, earlier flushes). */
export async function addCounts(store: Store, rows: CountRow[]): Promise<void> {
  const t = store.t.tlsReportCounts
  await store.tx(async (db) => {
    for (let i = 0; i < rows.length; i += 200) {
      await db.insert(t).values(rows.slice(i, i + 200).map((r) => ({ ...r, failedAt: null })))
        .onConflictDoUpdate({ target: [t.day, t.domain, t.policyType, t.policy, t.mxHost, t.result], set: { sessions: sql`${t.sessions} + excluded.sessions` } })
    }
  })
}

/** Day and domain pairs with counts of days before `today` (oldest first), at most `limit`. */
export async function finishedDays(store: Store, today: string, limit: number): Promise<Array<{ day: string; domain: string }>> {
  const t = store.t.tlsReportCounts
  return store.db.selectDistinct({ day: t.day, domain: t.domain }).from(t).where(lt(t.day, today)).orderBy(asc(t.day), asc(t.domain)).limit(limit)
}

export async function countsOf(store: Store, day: string, domain: string): Promise<CountRow[]> {
  const t = store.t.tlsReportCounts
  return store.db.select().from(t).where(and(eq(t.day, day), eq(t.domain, domain)))
}

/** The report of that day and domain is done (sent, or nobody to send it to): its counts go. */
export async function deleteCounts(store: Store, day: string, domain: string): Promise<void> {
  const t = store.t.tlsReportCounts
  await store.tx((db) => db.delete(t).where(and(eq(t.day, day), eq(t.domain, domain))))
}

/** Sending failed everywhere: remembered, so that the job tries again at its next run and gives up a day later. */
export async function markFailed(store: Store, day: string, domain: string, at: Date): Promise<void> {
  const t = store.t.tlsReportCounts
  await store.tx((db) => db.update(t).set({ failedAt: at }).where(and(eq(t.day, day), eq(t.domain, domain), isNull(t.failedAt))))
}
