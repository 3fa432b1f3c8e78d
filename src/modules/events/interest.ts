import type { Db, Store } from '../../db/client'
import { statementRows } from '../../db/statement'
import { consumersGeneration, eventConsumers } from './consumers'

/**
 * Whether anything consumes a project's events: the outbox (outbox.ts) writes a transaction's row only
 * for a project where some consumer could react. A project without workflows, webhooks or tracked segments
 * then pays one look-up per transaction for its events instead of an outbox row and its delivery.
 *
 * The look-up is made of the `interest` each registered consumer declares (consumers.ts; `wireConsumers`,
 * src/main.ts, registers them), so a consumer cannot be added without saying when it is owed events. It
 * runs inside the appending transaction, on its own connection, just before COMMIT:
 * - on SQLite that transaction holds the write lock, so what it reads cannot change before the events
 *   commit: a workflow enabled, an endpoint added, an execution put to wait commits either before the
 *   events (which are then owed) or after them (the events came first);
 * - on PostgreSQL a change that commits while the transaction runs may not be seen: it happened at the
 *   same moment as the events, and either order is right (docs/decisions.md, Event delivery).
 */
interface Probe { generation: number; text: string | null }
let probe: Probe | null = null
/** Interests handed to a thread that has no consumers of its own (the track writer, adoptInterests). */
let adopted: { generation: number; interests: string[] } | null = null

/** The interests of the registered consumers, in registration order. */
export function declaredInterests(): string[] {
  return eventConsumers().map((c) => c.interest)
}

/**
 * In a thread without consumers (the track writer thread, writer-worker.ts): decide with these interests,
 * the main thread's `declaredInterests()`, which it sends again whenever they change.
 */
export function adoptInterests(interests: string[]): void {
  adopted = { generation: (adopted?.generation ?? 0) - 1, interests }
}

function currentProbe(): Probe {
  // Adopted interests use negative generations, so they never match the registry's.
  const generation = adopted ? adopted.generation : consumersGeneration()
  if (probe?.generation === generation) return probe
  const interests = adopted ? adopted.interests : declaredInterests()
  const text = interests.length ? `SELECT 1 AS owed WHERE ${interests.map((q) => `EXISTS (${q})`).join(' OR ')}` : null
  probe = { generation, text }
  return probe
}

/** Whether some registered consumer may react to events of `projectId`, read in the transaction `db` (see above). */
export async function projectHasConsumers(store: Store, db: Db, projectId: string): Promise<boolean> {
  const p = currentProbe()
  if (!p.text) return false
  return (await statementRows(store, db, p.text, projectId)).length > 0
}
