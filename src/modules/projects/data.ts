import { sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

/**
 * The tables holding a project's data, wiped by POST /users/@me/projects/:id/reset (one transaction) and
 * emptied before DELETE. Keys, settings, members and invitations are kept by a reset.
 * A module that adds project data adds its table HERE, before the tables it references
 * (rows are deleted in this order, so children come first).
 */
export const PROJECT_DATA_TABLES: readonly string[] = [
  'analytics_hourly',
  'email_stats',
  'campaign_stats',
  'campaign_unsubscribes',
  'send_pacing',
  'inbound_messages',
  'events',
  'contacts',
  'jobs',
  'idempotency_keys',
  'mail_capture',
  'campaigns',
  'segment_members',
  'segments',
]

/**
 * Onboarding steps of GET /projects/:id/setup-state: a step is done when its query finds a row of the
 * project. A module adds its step here (`sql` gets the project id; keep it to one indexed `SELECT 1`).
 */
export const SETUP_STEPS: ReadonlyArray<{ id: string; title: string; done: (projectId: string) => SQL }> = [
  // verified_at is set while the domain is verified and cleared when it stops being so (domains/service.ts).
  { id: 'domain', title: 'Verify a sending domain', done: (p) => sql`SELECT 1 AS x FROM domains WHERE project_id = ${p} AND verified_at IS NOT NULL LIMIT 1` },
  { id: 'contact', title: 'Add a contact', done: (p) => sql`SELECT 1 AS x FROM contacts WHERE project_id = ${p} LIMIT 1` },
  {
    id: 'event', title: 'Track an event with POST /v1/track',
    done: (p) => sql`SELECT 1 AS x FROM events WHERE project_id = ${p} AND name NOT LIKE 'email.%' AND name NOT LIKE 'contact.%' AND name NOT LIKE 'segment.%' LIMIT 1`,
  },
]

export async function wipeProjectData(store: Store, db: Db, projectId: string): Promise<void> {
  // The emails stay; the delivery events read from their rows (events/inline.ts) go with the events.
  await store.exec(sql`UPDATE emails SET inline_events = NULL WHERE project_id = ${projectId} AND inline_events IS NOT NULL`, db)
  for (const table of PROJECT_DATA_TABLES) {
    await store.exec(sql`DELETE FROM ${sql.identifier(table)} WHERE project_id = ${projectId}`, db)
  }
}
