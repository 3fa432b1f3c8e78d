import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { sql } from 'drizzle-orm'
import { dkimKey } from '../../src/secrets'
import { rotateKeys } from '../../src/modules/projects/service'
import { insertTestDomain } from '../helpers/domains'
import { forEachStore, type TestEnv } from '../helpers/env'
import { must } from '../helpers/must'

/*
 * `mailctl mcp` (issue 39 item 5) driven by the official MCP TypeScript SDK's client over stdio against the
 * real program (`bun cli/mailctl.ts mcp`, a child process): the tools act for the project of
 * MAILCTL_MCP_KEY, with the HTTP API's validation and refusals.
 */

const ROOT = join(import.meta.dir, '..', '..')

function childEnv(env: TestEnv, key: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: env.config.databaseUrl,
    MAILCTL_DATA_DIR: env.config.dataDir,
    MAILCTL_JWT_SECRET: must(env.config.jwtSecret, 'jwt secret'),
    MAILCTL_DKIM_KEY: dkimKey(env.config).toString('base64'),
    MAILCTL_HOSTNAME: env.config.hostname,
    MAILCTL_LOG_LEVEL: 'warn',
    MAILCTL_OUTBOUND: 'capture',
    // Look-ups of verify_email fail at once on loopback instead of waiting for a real resolver.
    MAILCTL_DNS_SERVERS: '127.0.0.1:9',
    MAILCTL_MCP_KEY: key,
  }
}

async function connect(env: TestEnv, key: string): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [join(ROOT, 'cli', 'mailctl.ts'), 'mcp'], env: childEnv(env, key), cwd: ROOT, stderr: 'pipe' })
  const client = new Client({ name: 'mailctl-test', version: '1.0.0' })
  await client.connect(transport)
  return client
}

interface Called { isError?: boolean; body: Record<string, unknown> & { error?: { code: string; statusCode: number; errors?: Array<{ field: string }> } } }

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Called> {
  const r = await client.callTool({ name, arguments: args }) as { isError?: boolean; content: Array<{ type: string; text: string }> }
  return { isError: r.isError, body: JSON.parse(r.content[0].text) }
}

forEachStore('mailctl mcp', (env) => {
  test('lists the API verbs as tools, each with the route model as its input schema', async () => {
    const p = await env.project()
    const client = await connect(env, p.secretKey)
    try {
      const { tools } = await client.listTools()
      const names = tools.map((t) => t.name).sort()
      expect(names).toEqual(['campaign_stats', 'create_campaign', 'create_segment', 'create_template', 'enable_workflow', 'list_campaigns', 'list_contacts', 'list_segments', 'list_templates', 'list_workflows', 'send_campaign', 'send_email', 'track_event', 'upsert_contact', 'verify_email'])
      for (const t of tools) expect(t.inputSchema.type).toBe('object')
      expect(must(tools.find((t) => t.name === 'track_event'), 'track').inputSchema.required).toContain('event')
    } finally { await client.close() }
  }, 60_000)

  test('contacts, events, templates, campaigns, segments, workflows and verify act on the project, as over HTTP', async () => {
    const p = await env.project()
    const domain = `mcp-${Date.now().toString(36)}.test`
    await insertTestDomain(env, p.id, domain, { verified: true })
    // A workflow made over HTTP (the MCP tools list and enable workflows; they do not build them).
    const wf = await env.request('POST', '/workflows', { key: p.secretKey, body: { name: 'Welcome', eventName: 'signup' } })
    expect(wf.status).toBe(201)
    const client = await connect(env, p.secretKey)
    try {
      const contact = await call(client, 'upsert_contact', { email: 'ada@example.com', data: { plan: 'pro' } })
      expect(contact.isError).toBeFalsy()
      expect(contact.body._meta).toMatchObject({ isNew: true })
      const tracked = await call(client, 'track_event', { email: 'ada@example.com', event: 'signup', data: { source: 'mcp' } })
      expect(tracked.isError).toBeFalsy()
      const [{ n }] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE project_id = ${p.id} AND name = 'signup'`)
      expect(Number(n)).toBe(1)
      const list = await call(client, 'list_contacts', {})
      expect((list.body.data as Array<{ email: string }>).map((c) => c.email)).toEqual(['ada@example.com'])

      const tpl = await call(client, 'create_template', { name: 'Hello', subject: 'Hi {{firstName}}', body: '<p>Hello</p>', from: `hello@${domain}`, type: 'TRANSACTIONAL' })
      expect(tpl.isError).toBeFalsy()
      expect((await call(client, 'list_templates', {})).body.total).toBe(1)

      const seg = await call(client, 'create_segment', { name: 'Pro', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } })
      expect(seg.isError).toBeFalsy()
      expect(((await call(client, 'list_segments')).body as unknown as unknown[]).length).toBe(1)

      const camp = await call(client, 'create_campaign', { name: 'Launch', subject: 'News', body: '<p>News</p>', from: `news@${domain}`, audienceType: 'SEGMENT', segmentId: seg.body.id })
      expect(camp.isError).toBeFalsy()
      const campaignId = (camp.body as { id: string }).id
      const sent = await call(client, 'send_campaign', { id: campaignId })
      expect(sent.isError).toBeFalsy()
      const stats = await call(client, 'campaign_stats', { id: campaignId })
      expect(stats.isError).toBeFalsy()
      expect((await call(client, 'list_campaigns', {})).body.total).toBe(1)

      const wfs = await call(client, 'list_workflows', {})
      expect((wfs.body.data as Array<{ id: string }>).map((w) => w.id)).toEqual([wf.body.id])
      const enable = await call(client, 'enable_workflow', { id: wf.body.id })
      expect(enable.isError).toBeFalsy()
      const after = await env.request('GET', `/workflows/${wf.body.id}`, { key: p.secretKey })
      expect(after.body.enabled).toBe(true)

      const verified = await call(client, 'verify_email', { email: 'someone@gmial.com' })
      expect(verified.isError).toBeFalsy()
      expect(verified.body).toMatchObject({ isTypo: true, valid: false })

      const mail = await call(client, 'send_email', { to: 'grace@example.com', from: `hello@${domain}`, subject: 'Hi', body: '<p>Hi</p>' })
      expect(mail.isError).toBeFalsy()
    } finally { await client.close() }
  }, 120_000)

  test('bad input and refusals carry the error envelope of the HTTP API', async () => {
    const p = await env.project()
    const other = await env.project()
    const theirs = await env.request('POST', '/workflows', { key: other.secretKey, body: { name: 'Theirs', eventName: 'x' } })
    const client = await connect(env, p.secretKey)
    try {
      const bad = await call(client, 'upsert_contact', { email: 'not-an-email' })
      expect(bad.isError).toBe(true)
      expect(bad.body.error?.code).toBe('VALIDATION_ERROR')
      expect(bad.body.error?.statusCode).toBe(422)
      expect(bad.body.error?.errors?.map((e) => e.field)).toContain('email')
      const missing = await call(client, 'track_event', { email: 'a@example.com' })
      expect(missing.body.error?.code).toBe('VALIDATION_ERROR')
      // Text no store can hold is refused as over HTTP (a 500 on PostgreSQL before), on both stores.
      for (const [tool, args, field] of [
        ['track_event', { email: 'a@example.com', event: 'half \ud800' }, 'event'],
        ['create_template', { name: 'T\u0000', subject: 's', body: 'b' }, 'name'],
      ] as const) {
        const unstorable = await call(client, tool, args)
        expect(unstorable.body.error?.code).toBe('VALIDATION_ERROR')
        expect(unstorable.body.error?.errors).toEqual([expect.objectContaining({ field, code: 'invalid_text' })])
      }
      const unverified = await call(client, 'send_email', { to: 'x@example.com', from: 'me@unverified.test', subject: 's', body: 'b' })
      expect(unverified.isError).toBe(true)
      expect(unverified.body.error?.statusCode).toBe(403)
      // Another project's record is not found, as over HTTP.
      const foreign = await call(client, 'enable_workflow', { id: theirs.body.id })
      expect(foreign.body.error?.code).toBe('NOT_FOUND')
      const unknown = await call(client, 'campaign_stats', { id: 'no-such-campaign' })
      expect(unknown.body.error?.code).toBe('NOT_FOUND')
      // A key rotated (or a project disabled) while the server runs: the next call is refused.
      await rotateKeys(env.store, p.id)
      const rotated = await call(client, 'list_contacts', {})
      expect(rotated.body.error?.code).toBe('INVALID_API_KEY')
    } finally { await client.close() }
    const q = await env.project()
    await env.store.exec(env.kind === 'pg' ? sql`UPDATE projects SET disabled = true WHERE id = ${q.id}` : sql`UPDATE projects SET disabled = 1 WHERE id = ${q.id}`)
    const disabled = await connect(env, q.secretKey).then(() => null, (e: Error) => e)
    expect(disabled).toBeInstanceOf(Error)
  }, 120_000)

  test('a public key or no key is refused at start', async () => {
    const p = await env.project()
    const proc = Bun.spawn([process.execPath, join(ROOT, 'cli', 'mailctl.ts'), 'mcp'], { env: childEnv(env, p.publicKey), cwd: ROOT, stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' })
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
    expect(code).toBe(1)
    expect(stderr).toMatch(/INVALID_API_KEY/)
    const none = Bun.spawn([process.execPath, join(ROOT, 'cli', 'mailctl.ts'), 'mcp'], { env: { ...childEnv(env, ''), MAILCTL_MCP_KEY: '' }, cwd: ROOT, stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' })
    expect(await none.exited).toBe(2)
  }, 60_000)
}, { rateLimitPerMinute: 100_000_000 })
