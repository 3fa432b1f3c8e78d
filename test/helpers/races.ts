import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import type { TestEnv } from './env'
import { until } from './worker'

/** A connection of these helpers: their own inserts are never held. */
const helperConnection = (env: TestEnv) => postgres(env.config.databaseUrl, { max: 1, onnotice: () => {}, connection: { application_name: 'race-helper' } })

/**
 * A trigger that holds inserts into `table` (the rows meeting `when`, from connections other than these
 * helpers') while advisory lock 4242 is held. Its callers drop it after.
 */
async function holdInserts(q: postgres.Sql, table: string, when: string): Promise<void> {
  await q.unsafe(`CREATE OR REPLACE FUNCTION test_pause_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF current_setting('application_name') <> 'race-helper' THEN PERFORM pg_advisory_lock(4242); PERFORM pg_advisory_unlock(4242); END IF;
      RETURN NEW; END $$;
    DROP TRIGGER IF EXISTS test_pause_insert ON ${table};
    CREATE TRIGGER test_pause_insert BEFORE INSERT ON ${table} FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION test_pause_insert()`)
}

/** Until a statement like `what` waits for a lock that the backend `blocker` holds. */
function waitingOn(env: TestEnv, blocker: number, what: string): Promise<void> {
  return until(async () => (await env.store.rows(sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND ${blocker}::int = ANY(pg_blocking_pids(pid)) AND query ILIKE ${what}`)).length > 0, 10_000, `a statement like ${what} to wait`)
}

const pidOf = async (q: postgres.Sql) => (await q<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`)[0].pid

/** `p`, or an error naming `what` after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let late: Timer | undefined
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => { late = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms) })])
  } finally {
    clearTimeout(late)
  }
}

/**
 * Runs `write` with its inserts into `table` held (holdInserts) and, while the first waits, `meanwhile`
 * on a connection of its own; then lets the insert go. Answers what `write` resolved to (or threw: `err`).
 * The trigger is dropped after.
 */
export async function whileInsertHeld<T>(env: TestEnv, table: string, write: () => Promise<T>, meanwhile: (q: postgres.Sql) => Promise<void>): Promise<{ r?: T; err?: unknown }> {
  const holder = helperConnection(env)
  const other = helperConnection(env)
  try {
    await holdInserts(holder, table, 'true')
    await holder`SELECT pg_advisory_lock(4242)`
    const holderPid = await pidOf(holder)
    const outcome = write().then((r) => ({ r }), (err: unknown) => ({ err }))
    await waitingOn(env, holderPid, `%insert into "${table}"%`)
    await within(meanwhile(other), 10_000, 'the other writer')
    await holder`SELECT pg_advisory_unlock(4242)`
    return await within(outcome, 20_000, 'the write')
  } finally {
    // The lock first: a write still held in the trigger would hold the DROP up.
    await holder.unsafe(`SELECT pg_advisory_unlock_all(); DROP TRIGGER IF EXISTS test_pause_insert ON ${table}`).catch(() => {})
    await Promise.all([holder.end({ timeout: 1 }), other.end({ timeout: 1 })])
  }
}

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
 * and only while the helper holds the lock; it is dropped after.
 * Answers what `write` resolved to (or threw: `err`) and the id of the contact the other connection made.
 */
export async function contactMadeAndGone<T>(env: TestEnv, projectId: string, email: string, write: () => Promise<T>): Promise<{ r?: T; err?: unknown; madeId: string }> {
  if (!email.startsWith(RACED_EMAIL_PREFIX)) throw new Error(`the raced email must start with ${RACED_EMAIL_PREFIX}`)
  const holder = helperConnection(env)
  const other = helperConnection(env)
  const locker = helperConnection(env)
  let proceed!: () => void
  let giveUp!: (err: Error) => void
  const mayDelete = new Promise<void>((resolve, reject) => { proceed = resolve; giveUp = reject })
  mayDelete.catch(() => {})
  try {
    await holdInserts(holder, 'contacts', `NEW.email LIKE '${RACED_EMAIL_PREFIX}%'`)
    await holder`SELECT pg_advisory_lock(4242)`
    const [holderPid, lockerPid] = await Promise.all([pidOf(holder), pidOf(locker)])
    const outcome = write().then((r) => ({ r }), (err: unknown) => ({ err }))
    await waitingOn(env, holderPid, '%insert into "contacts"%')
    const [made] = await other<{ id: string }[]>`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (${Bun.randomUUIDv7()}, ${projectId}, ${email}, true, '{}'::jsonb, now(), now()) RETURNING id`
    let locked!: () => void
    const isLocked = new Promise<void>((r) => { locked = r })
    const lockedTx = locker.begin(async (q) => {
      await q`SELECT id FROM contacts WHERE id = ${made.id} FOR UPDATE`
      locked()
      await mayDelete
      await q`DELETE FROM contacts WHERE id = ${made.id}`
    })
    await Promise.race([isLocked, lockedTx.then(() => { throw new Error('the locking transaction ended before it locked the contact') })])
    await holder`SELECT pg_advisory_unlock(4242)`
    // The insert met the contact the other writer made; the read after it waits for the third one's lock.
    await waitingOn(env, lockerPid, '%for update%')
    proceed()
    await lockedTx
    return { ...(await within(outcome, 20_000, 'the write')), madeId: made.id }
  } finally {
    // A failure midway must not leave the third connection's lock held (it would hold the upsert too): its
    // transaction rolls back first, then the trigger goes, and the advisory lock with the holder's session.
    giveUp(new Error('the test ended first'))
    await Promise.all([locker.end({ timeout: 1 }), other.end({ timeout: 1 })])
    await holder.unsafe('SELECT pg_advisory_unlock_all(); DROP TRIGGER IF EXISTS test_pause_insert ON contacts').catch(() => {})
    await holder.end({ timeout: 1 })
  }
}
