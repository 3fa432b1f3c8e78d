import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore } from './helpers/env'
import { buildApp } from '../src/http/app'
import { errorFields, MAX_LOGGED_CHARS, type Logger } from '../src/log'
import { createOutbound } from '../src/mail/outbound'
import { projectWithDomain, startTestDns } from './modules/emails/fixture'
import { deliveryStore } from '../src/modules/emails/delivery'

/** A logger that keeps its records. */
function recorder() {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = []
  const make = (base: Record<string, unknown>): Logger => {
    const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => { lines.push({ level, msg, fields: { ...base, ...fields } }) }
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (f) => make({ ...base, ...f }) }
  }
  return { log: make({}), lines }
}

const CAP = MAX_LOGGED_CHARS + 40

test('errorFields caps the message, the cause and the stack\'s first line; keeps short ones whole', () => {
  const short = errorFields(new Error('boom'))
  expect(short.error).toBe('boom')
  expect(String(short.stack)).toStartWith('Error: boom')
  expect(short.cause).toBeUndefined()

  const body = 'x'.repeat(100_000)
  const err = new Error(`Failed query: insert into t values ($1)\nparams: ${body}`, { cause: new Error(`stack depth limit exceeded ${body}`) })
  const f = errorFields(err)
  expect(String(f.error).length).toBeLessThan(CAP)
  expect(String(f.error)).toStartWith('Failed query: insert into t values ($1)')
  expect(String(f.error)).toEndWith(`... [${err.message.length - MAX_LOGGED_CHARS} more characters]`)
  expect(String(f.cause).length).toBeLessThan(CAP)
  expect(String(f.cause)).toStartWith('stack depth limit exceeded')
  // The frames stay after the capped first line.
  expect(String(f.stack).length).toBeLessThan(CAP * 6)
  expect(String(f.stack)).toContain('log.test.ts')
  expect(errorFields(`plain ${body}`).error).toBe(`${`plain ${body}`.slice(0, MAX_LOGGED_CHARS)}... [${100_006 - MAX_LOGGED_CHARS} more characters]`)
  expect(errorFields(Object.assign(new Error('x'), { cause: 'a reason' })).cause).toBe('a reason')
})

forEachStore('unhandled error log line', (env) => {
  test('a 500 whose query carried a large body logs the cause, never the whole body', async () => {
    const p = await env.project()
    const { log, lines } = recorder()
    const app = buildApp({ ...env.deps, log })
    // A real failure of the insert: a trigger refuses this one email.
    const install = env.kind === 'pg'
      ? [sql.raw(`CREATE FUNCTION t_fail() RETURNS trigger AS $$ BEGIN IF NEW.email = 'fail@example.com' THEN RAISE EXCEPTION 'refused by the test trigger'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`),
        sql.raw('CREATE TRIGGER t_fail BEFORE INSERT ON contacts FOR EACH ROW EXECUTE FUNCTION t_fail()')]
      : [sql.raw(`CREATE TRIGGER t_fail BEFORE INSERT ON contacts WHEN NEW.email = 'fail@example.com' BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END`)]
    await env.store.tx(async (db) => { for (const q of install) await env.store.exec(q, db) })
    const big = 'y'.repeat(60_000)
    let status: number
    try {
      const res = await app.handle(new Request('http://localhost/contacts', {
        method: 'POST', headers: { authorization: `Bearer ${p.secretKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'fail@example.com', data: { big } }),
      }))
      status = res.status
    } finally {
      await env.store.tx(async (db) => {
        await env.store.exec(sql.raw(env.kind === 'pg' ? 'DROP TRIGGER t_fail ON contacts' : 'DROP TRIGGER t_fail'), db)
        if (env.kind === 'pg') await env.store.exec(sql.raw('DROP FUNCTION t_fail()'), db)
      })
    }
    expect(status).toBe(500)
    const errors = lines.filter((l) => l.level === 'error')
    expect(errors).toHaveLength(1)
    expect(errors[0].msg).toBe('unhandled error')
    const line = JSON.stringify(errors[0].fields)
    expect(line).toContain('refused by the test trigger')
    expect(line).not.toContain('y'.repeat(MAX_LOGGED_CHARS + 1))
    expect(line.length).toBeLessThan(CAP * 8)
  })
})

const dns = await startTestDns()

forEachStore('log lines name the node', (env) => {
  test('every line of deps built by the composition root carries the node id (its row in nodes, its lease holders)', async () => {
    const { createDeps, closeDeps } = await import('../src/main')
    const { dkimKey } = await import('../src/secrets')
    const { log, lines } = recorder()
    const deps = await createDeps({ ...env.config, dkimKey: dkimKey(env.config).toString('base64') }, { migrate: false, log })
    try {
      const node = deps.runtime.node
      deps.log.info('hello')
      deps.log.child({ requestId: 'r1' }).warn('from a request')
      expect(lines.map((l) => l.fields.node)).toEqual([node.id, node.id])
      expect(lines[1].fields.requestId).toBe('r1')
      expect(node.newId()).toStartWith(`${node.id}:`)
    } finally {
      await closeDeps(deps)
    }
  })

  test('one line per delivery attempt, with the email id and the outcome', async () => {
    const p = await projectWithDomain(env, dns, `log-${Math.random().toString(36).slice(2, 8)}.test`)
    const sent = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: 'someone@log-dest.test', from: p.from, subject: 's', body: 'b' } })
    const emailId = sent.body.data.emails[0].email
    const { log, lines } = recorder()
    const pipeline = createOutbound({ ...env.deps, log: log.child({ node: 'n-test' }) }, deliveryStore, { signerThreads: 0 })
    try {
      await pipeline.drain()
    } finally {
      await pipeline.stop()
    }
    const line = lines.find((l) => l.msg === 'delivery' && l.fields.emailId === emailId)
    expect(line?.fields).toMatchObject({ node: 'n-test', emailId, projectId: p.id, domain: 'log-dest.test', attempt: 1, outcome: 'captured' })
  })
}, { outbound: 'capture', dnsServers: [dns.server] })
