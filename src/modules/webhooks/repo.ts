import { lt } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

/** The SQL of provider notifications: receipts that make a redelivered notification a no-op. */

/** Records a notification as seen; false when it was already (a redelivery). */
export async function claimReceipt(store: Store, db: Db, source: string, messageId: string, now: Date): Promise<boolean> {
  const r = store.t.notificationReceipts
  const rows = await db.insert(r).values({ source, messageId, receivedAt: now }).onConflictDoNothing().returning({ id: r.messageId })
  return rows.length > 0
}

export async function pruneReceipts(store: Store, db: Db, before: Date): Promise<number> {
  const r = store.t.notificationReceipts
  const rows = await db.delete(r).where(lt(r.receivedAt, before)).returning({ id: r.messageId })
  return rows.length
}
