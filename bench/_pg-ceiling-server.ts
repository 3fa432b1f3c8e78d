/**
 * Child process of bench/track.ts on PostgreSQL: the ceiling of the stack. A bare Elysia handler doing one
 * durable INSERT per request through postgres.js (a pool of 16 connections) into a table shaped like
 * `events`, on the PostgreSQL database given as argv[2]. Prints one JSON line {port} on stderr, then serves
 * until killed.
 */
import { Elysia } from 'elysia'
import postgres from 'postgres'

const sql = postgres(process.argv[2], { max: 16, onnotice: () => {}, connection: { application_name: 'mailctl-ceiling' } })
await sql`CREATE TABLE IF NOT EXISTS ceiling_events (id uuid PRIMARY KEY, email text NOT NULL, name text NOT NULL, data jsonb NOT NULL, created_at timestamptz NOT NULL)`
const app = new Elysia()
  .post('/v1/track', async ({ body }) => {
    const b = body as { email: string; event: string; data?: unknown }
    const id = Bun.randomUUIDv7()
    await sql`INSERT INTO ceiling_events (id, email, name, data, created_at) VALUES (${id}, ${b.email}, ${b.event}, ${sql.json((b.data ?? {}) as postgres.JSONValue)}, now())`
    return { success: true, data: { event: id } }
  })
  .listen({ port: 0, hostname: '127.0.0.1' })
process.stderr.write(`${JSON.stringify({ port: app.server?.port })}\n`)
process.on('SIGTERM', async () => { await sql.end({ timeout: 1 }); process.exit(0) })
