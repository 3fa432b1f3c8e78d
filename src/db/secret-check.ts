import type { Store } from './client'

/** The repo of `secret_checks` (src/db/schema/secrets.ts): the fingerprints of the keys, by name. */

export async function recordedFingerprints(store: Store): Promise<Record<string, string>> {
  const rows = await store.db.select().from(store.t.secretChecks)
  return Object.fromEntries(rows.map((r) => [r.name, r.fingerprint]))
}

/**
 * Records each fingerprint unless one is already recorded under its name (the first node to start wins
 * a race), then answers what is recorded. Once all are recorded, a start only reads.
 */
export async function recordFingerprints(store: Store, fingerprints: Record<string, string>, now: Date): Promise<Record<string, string>> {
  const known = await recordedFingerprints(store)
  if (Object.keys(fingerprints).every((name) => name in known)) return known
  const t = store.t.secretChecks
  await store.tx(async (db) => {
    const rows = Object.entries(fingerprints).map(([name, fingerprint]) => ({ name, fingerprint, createdAt: now }))
    await db.insert(t).values(rows).onConflictDoNothing({ target: t.name })
  })
  return recordedFingerprints(store)
}
