import type { Store } from '../../src/db/client'
import { must } from '../helpers/must'

/** Seeds contacts and events straight into the tables (the engine reads only those). */
export const MIN = 60_000
export const HOUR = 3_600_000
export const DAY = 86_400_000

export interface SeedContact {
  email: string
  subscribed?: boolean
  data?: Record<string, unknown>
  /** ms before now */
  age: number
  /** ms before now; defaults to age */
  updated?: number
}

export interface SeedEvent { email: string | null; name: string; ago: number; data?: Record<string, unknown> }

export async function seed(store: Store, projectId: string, now: Date, contacts: SeedContact[], events: SeedEvent[] = []): Promise<Map<string, string>> {
  const ids = new Map<string, string>()
  await store.tx(async (db) => {
    for (const c of contacts) {
      const id = Bun.randomUUIDv7()
      ids.set(c.email, id)
      await db.insert(store.t.contacts).values({
        id, projectId, email: c.email, subscribed: c.subscribed ?? true, data: c.data ?? {},
        createdAt: new Date(now.getTime() - c.age), updatedAt: new Date(now.getTime() - (c.updated ?? c.age)),
      })
    }
    for (const e of events) {
      await db.insert(store.t.events).values({
        id: Bun.randomUUIDv7(), projectId, contactId: e.email ? must(ids.get(e.email), e.email) : null, name: e.name, data: e.data ?? {},
        emailId: null, createdAt: new Date(now.getTime() - e.ago),
      })
    }
  })
  return ids
}
