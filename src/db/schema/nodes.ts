import type { Cols } from '../columns'

/**
 * The processes that hold leases (migration 0014_nodes; src/jobs/nodes.ts): one row per running node,
 * its heartbeat renewed every few seconds and the row deleted at a clean stop. A lease whose holder's
 * node row is stale or gone is handed back.
 */
export function nodeTables(c: Cols) {
  const nodes = c.table('nodes', {
    /** A random id per process start; lease holder ids are `<node id>:<worker suffix>`. */
    id: c.text('id').primaryKey(),
    /** For operators only: never used to judge liveness (two containers may share both). */
    hostname: c.text('hostname').notNull(),
    pid: c.int('pid').notNull(),
    startedAt: c.ts('started_at').notNull(),
    heartbeatAt: c.ts('heartbeat_at').notNull(),
  })
  return { nodes }
}
