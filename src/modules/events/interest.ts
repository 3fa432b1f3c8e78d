import { sql } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from '../../db/client'
import { ENABLED_ENDPOINT_SQL } from '../hooks/repo'
import { TRACKED_SEGMENT_SQL } from '../segments/repo'
import { ENABLED_WORKFLOW_SQL, WAITING_EXECUTION_SQL } from '../workflows/repo'

/**
 * Whether anything consumes a project's events: the outbox (outbox.ts) writes a transaction's row only
 * for a project where some consumer could react. A project without workflows, webhooks or tracked segments
 * then pays one look-up per transaction for its events instead of an outbox row and its delivery.
 *
 * One entry per consumer registered in `wireConsumers` (src/main.ts), by its name: a condition ($1: the
 * project id) that holds while the consumer may react to some event of the project. A test checks that
 * every registered consumer has its entry. The look-up runs inside the appending transaction, on its own
 * connection, just before COMMIT:
 * - on SQLite that transaction holds the write lock, so what it reads cannot change before the events
 *   commit: a workflow enabled, an endpoint added, an execution put to wait commits either before the
 *   events (which are then owed) or after them (the events came first);
 * - on PostgreSQL a change that commits while the transaction runs may not be seen: it happened at the
 *   same moment as the events, and either order is right (docs/decisions.md, Event delivery).
 */
export const CONSUMER_INTEREST: Readonly<Record<string, string>> = {
  // Segment recompute hints: tracked DYNAMIC segments (segments/jobs.ts, trackedDeps).
  'segments.hints': TRACKED_SEGMENT_SQL,
  // Customer webhooks: an enabled endpoint (hooks/service.ts, createDeliveries).
  'hooks.deliveries': ENABLED_ENDPOINT_SQL,
  // Workflow triggers: an enabled workflow (workflows/engine.ts, startFromEvents).
  'workflows.triggers': ENABLED_WORKFLOW_SQL,
  // Waits for events: a WAITING execution (workflows/engine.ts, resumeOnEvents).
  'workflows.waits': WAITING_EXECUTION_SQL,
}

const PROBE = `SELECT 1 AS owed WHERE ${Object.values(CONSUMER_INTEREST).map((q) => `EXISTS (${q})`).join(' OR ')}`
const SQLITE_PROBE = PROBE.replace(/\$1/g, '?1')
const PG_PARTS = PROBE.split('$1').map((part) => sql.raw(part))

/** Whether some consumer may react to events of `projectId`, read in the transaction `db` (see above). */
export async function projectHasConsumers(store: Store, db: Db, projectId: string): Promise<boolean> {
  if (store.dialect === 'sqlite') return sqliteConnection(db).query(SQLITE_PROBE).get(projectId) !== null
  return (await store.rows(sql.join(PG_PARTS, sql`${projectId}`), db)).length > 0
}
