import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import type { TestEnv } from './env'
import { until } from './worker'

/** The emails whose inserts contactMadeAndGone can hold: they start with this. */
export const RACED_EMAIL_PREFIX = 'made-and-gone'

/**
 * Makes, on PostgreSQL, the double race a contact upsert can lose, for one email starting with
 * RACED_EMAIL_PREFIX: the upsert in `write` finds no contact and inserts one; a trigger of this helper holds
 * that insert on an advisory lock while another connection creates the contact and a third locks it;
 * released, the insert meets the contact the other made, and the upsert's read of it waits for the third
 * connection, which then deletes it. What the upsert does next is the code under test. Made, not hoped for:
 * each step waits for the one before it (pg_stat_activity).
 *
 * The trigger holds only inserts of RACED_EMAIL_PREFIX emails from connections other than this helper's,
 * and only while the helper holds the lock; it stays in the test file's own database, dropped after it.
 * Answers what `write` resolved to (or threw: `err`) and the id of the contact the other connection made.
 */
export async function contactMadeAndGone<T>(env: TestEnv, projectId: string, email: string, write: () => Promise<T>): Promise<{ r?: T; err?: unknown; madeId: string }> {
  if (!email.startsWith(RACED_EMAIL_PREFIX)) throw new Error(`the raced email must start with ${RACED_EMAIL_PREFIX}`)
  const open = () => postgres(env.config.databaseUrl, { max: 1, onnotice: () => {}, connection: { application_name: 'race-helper' } })
  const holder = open()
  const other = open()
  const locker = open()
  let proceed!: () => void
  let giveUp!: (err: Error) => void
  const mayDelete = new Promise<void>((resolve, reject) => { proceed = resolve; giveUp = reject })
  mayDelete.catch(() => {})
  try {
    await holder.unsafe(`CREATE OR REPLACE FUNCTION test_pause_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        IF current_setting('application_name') <> 'race-helper' THEN PERFORM pg_advisory_lock(4242); PERFORM pg_advisory_unlock(4242); END IF;
        RETURN NEW; END $$;
      DROP TRIGGER IF EXISTS test_pause_insert ON contacts;
      CREATE TRIGGER test_pause_insert BEFORE INSERT ON contacts FOR EACH ROW WHEN (NEW.email LIKE '${RACED_EMAIL_PREFIX}%') EXECUTE FUNCTION test_pause_insert()`)
    await holder`SELECT pg_advisory_lock(4242)`
    const waitingOn = (what: string) => until(async () => (await env.store.rows(sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type IN ('Lock', 'LWLock') AND query ILIKE ${what} AND pid <> pg_backend_pid()`)).length > 0, 10_000, `the upsert to wait (${what})`)
    const outcome = write().then((r) => ({ r }), (err: unknown) => ({ err }))
    await waitingOn('%insert into "contacts"%')
    const [made] = await other<{ id: string }[]>`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (${Bun.randomUUIDv7()}, ${projectId}, ${email}, true, '{}'::jsonb, now(), now()) RETURNING id`
    let locked!: () => void
    const isLocked = new Promise<void>((r) => { locked = r })
    const lockedTx = locker.begin(async (q) => {
      await q`SELECT id FROM contacts WHERE id = ${made.id} FOR UPDATE`
      locked()
      await mayDelete
      await q`DELETE FROM contacts WHERE id = ${made.id}`
    })
    await isLocked
    await holder`SELECT pg_advisory_unlock(4242)`
    // The insert met the contact the other writer made; the read after it waits for the third one's lock.
    await waitingOn('%for update%')
    proceed()
    await lockedTx
    return { ...(await outcome), madeId: made.id }
  } finally {
    // A failure midway must not leave the third connection's lock held (it would hold the upsert too): its
    // transaction rolls back, and the advisory lock goes with the holder's session.
    giveUp(new Error('the test ended first'))
    await Promise.all([locker.end({ timeout: 1 }), holder.end({ timeout: 1 }), other.end({ timeout: 1 })])
  }
}
