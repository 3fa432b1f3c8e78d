import { beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { ctxFor } from '../../../src/deps'
import { createTemplate } from '../../../src/modules/templates/service'
import type { NewProject } from '../../../src/modules/projects/service'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from './fixture'
import { carriedHeaders } from '../../../src/modules/emails/relay'
import { must } from '../../helpers/must'

/** POST /v1/send: the API contract, the email record, suppression and idempotency. Delivery: test/mail/. */

const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
const rnd = () => Math.random().toString(36).slice(2, 8)

forEachStore('POST /v1/send', (env) => {
  let p: NewProject
  let other: NewProject & { from: string }
  let domain: string
  let from: string

  beforeAll(async () => {
    domain = `send-${rnd()}.test`
    from = `hello@${domain}`
    p = await projectWithDomain(env, dns, domain)
    other = await projectWithDomain(env, dns, `other-${rnd()}.test`)
  })

  const send = (body: unknown, opts: { key?: string | null; headers?: Record<string, string> } = {}) =>
    env.request('POST', '/v1/send', { key: opts.key === undefined ? p.secretKey : opts.key, body, headers: opts.headers })

  /** The email record with its content (email_contents). */
  async function emailRow(id: string) {
    const { emails, emailContents } = env.store.t
    const [row] = await env.store.db.select().from(emails).innerJoin(emailContents, eq(emailContents.emailId, emails.id)).where(eq(emails.id, id))
    return { ...row.emails, ...row.email_contents }
  }
  async function queued(id: string) {
    const { outboundQueue } = env.store.t
    return (await env.store.db.select().from(outboundQueue).where(eq(outboundQueue.emailId, id)))[0] ?? null
  }
  async function contact(projectId: string, email: string) {
    const { contacts } = env.store.t
    return (await env.store.db.select().from(contacts).where(and(eq(contacts.projectId, projectId), eq(contacts.email, email))))[0] ?? null
  }

  test('queues one email per recipient before answering, with the result shape of docs/decisions.md (Field names)', async () => {
    const to = `Alice.${rnd()}@Dest.Test`
    const res = await send({ to, from, subject: 'Hi {{name}}', body: '<p>Hello {{name}}</p>', data: { name: 'Alice' } })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.data.emails).toHaveLength(1)
    expect(Object.keys(res.body.data).sort()).toEqual(['emails', 'timestamp'])
    expect(res.body.data.emails[0].status).toBe('queued')
    expect(new Date(res.body.data.timestamp).toString()).not.toBe('Invalid Date')
    const [{ contact: c, email: id }] = res.body.data.emails
    expect(c.email).toBe(to.toLowerCase())
    const row = await emailRow(id)
    expect(row).toMatchObject({ projectId: p.id, contactId: c.id, status: 'PENDING', toAddress: to.toLowerCase(), fromAddress: from, subject: 'Hi Alice', type: 'TRANSACTIONAL', sourceType: 'send', listUnsubscribe: false })
    expect(row.html).toContain('<p>Hello Alice</p>')
    expect(row.text).toContain('Hello Alice')
    expect(row.messageId).toBe(`<${id}@${domain}>`)
    expect(await queued(id)).toMatchObject({ projectId: p.id, domain: 'dest.test', attempts: 0 })
    // A new contact is not subscribed unless the request says so, and keeps the data.
    expect(await contact(p.id, to.toLowerCase())).toMatchObject({ subscribed: false, data: { name: 'Alice' } })
  })

  test('an array is processed recipient by recipient, each with its own contact data', async () => {
    const a = `a.${rnd()}@dest.test`
    const b = `b.${rnd()}@dest.test`
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: b, data: { plan: 'pro' } } })
    const res = await send({
      to: [a, { name: 'Bee Person', email: b }], from: { name: 'Acme', email: from },
      subject: 'Plan {{plan}}', body: '<p>{{greeting}}, you are on {{plan}}</p>', data: { greeting: { value: 'Hey', persistent: false } },
    })
    expect(res.status).toBe(200)
    const [ea, eb] = res.body.data.emails
    expect([ea.contact.email, eb.contact.email]).toEqual([a, b])
    const ra = await emailRow(ea.email)
    const rb = await emailRow(eb.email)
    expect(ra.subject).toBe('Plan ')
    expect(rb.subject).toBe('Plan pro')
    expect(rb.html).toContain('Hey, you are on pro')
    expect(rb.toName).toBe('Bee Person')
    expect(ra.fromName).toBe('Acme')
    // persistent: false is used for the email only.
    expect(must(await contact(p.id, b), 'the contact').data).toEqual({ plan: 'pro' })
    expect(must(await contact(p.id, a), 'the contact').data).toEqual({})
  })

  test('from "Name <email>", the deprecated name fallback, reply and custom headers are kept', async () => {
    const r1 = await send({ to: `n1.${rnd()}@dest.test`, from: `Support Team <${from}>`, subject: 's', body: '<p>b</p>', name: 'Ignored' })
    expect((await emailRow(r1.body.data.emails[0].email)).fromName).toBe('Support Team')
    const r2 = await send({ to: `n2.${rnd()}@dest.test`, from, name: 'Legacy Name', subject: 's', body: '<p>b</p>', reply: 'Help@Example.org', headers: { 'X-Campaign': 'spring', 'List-Unsubscribe': '<mailto:u@example.org>' } })
    const row = await emailRow(r2.body.data.emails[0].email)
    expect(row.fromName).toBe('Legacy Name')
    expect(row.replyTo).toBe('Help@Example.org')
    expect(row.headers).toEqual({ 'X-Campaign': 'spring', 'List-Unsubscribe': '<mailto:u@example.org>' })
    // Unknown fields (the SDK's type: "html") are ignored.
    const r3 = await send({ to: `n3.${rnd()}@dest.test`, from, subject: 's', body: '<p>b</p>', type: 'html' })
    expect(r3.status).toBe(200)
  })

  test('a template supplies subject, body, sender and type; explicit fields override', async () => {
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const tpl = await createTemplate(ctx, { name: 'Welcome', subject: 'Welcome {{first}}', body: '<h1>Hi {{first}}</h1><a href="{{unsubscribeUrl}}">unsubscribe</a>', from, fromName: 'Tpl Sender', replyTo: 'reply@example.org', type: 'MARKETING' })
    const to = `t.${rnd()}@dest.test`
    const res = await send({ to, template: tpl.id, data: { first: 'Zoe' } })
    expect(res.status).toBe(200)
    const row = await emailRow(res.body.data.emails[0].email)
    expect(row).toMatchObject({ subject: 'Welcome Zoe', fromAddress: from, fromName: 'Tpl Sender', replyTo: 'reply@example.org', type: 'MARKETING', templateId: tpl.id, listUnsubscribe: true })
    expect(row.html).toContain('<h1>Hi Zoe</h1>')
    expect(row.html).toContain(`${env.config.publicUrl}/unsubscribe/`)
    const over = await send({ to, template: tpl.id, subject: 'Override {{first}}', data: { first: 'Zed' } })
    expect((await emailRow(over.body.data.emails[0].email)).subject).toBe('Override Zed')
    // Another project's template, or an unknown id: 404. Not a uuid: 422.
    const foreign = await createTemplate(ctxFor(env.deps, other.id, { kind: 'cli' }), { name: 'x', subject: 's', body: '<p>b</p>', from: other.from })
    const r404 = await send({ to, template: foreign.id })
    expect(r404.status).toBe(404)
    expect(r404.body.error.code).toBe('NOT_FOUND')
    expect((await send({ to, template: Bun.randomUUIDv7() })).status).toBe(404)
    const bad = await send({ to, template: 'not-a-uuid' })
    expect(bad.status).toBe(422)
    expect(bad.body.error.errors[0].field).toBe('template')
  })

  test('type "markdown" renders the body (given or the template\'s) as Markdown, values as text; "html" is unchanged', async () => {
    const to = `md.${rnd()}@dest.test`
    const body = '# Hi {{name}}\n\n**Thanks** for joining. [Manage]({{manageUrl}})\n\n- one\n- two'
    const res = await send({ to, from, subject: 'Hi {{name}}', body, type: 'markdown', data: { name: '*Ann* <b>x</b>' } })
    expect(res.status).toBe(200)
    const row = await emailRow(res.body.data.emails[0].email)
    expect(row.html).toContain('<h1>Hi *Ann* &lt;b&gt;x&lt;/b&gt;</h1>')
    expect(row.html).toContain('<strong>Thanks</strong>')
    expect(row.html).toContain(`<a href="${env.config.publicUrl}/manage/`)
    expect(row.html).toContain('<li>two</li>')
    expect(row.text).toContain('Hi *Ann* <b>x</b>')
    expect(row.text).not.toContain('**Thanks**')
    expect(row.subject).toBe('Hi *Ann* <b>x</b>')
    const asHtml = await send({ to, from, subject: 's', body: '**Thanks**', type: 'html' })
    // Unchanged but for the open pixel, which in HTML without images of its own is a 1x1 table cell's background.
    expect((await emailRow(asHtml.body.data.emails[0].email)).html).toStartWith('**Thanks**<table role="presentation"')
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const tpl = await createTemplate(ctx, { name: 'Md', subject: 'T', body: '## {{name}}', from })
    const viaTpl = await send({ to, template: tpl.id, type: 'markdown', data: { name: 'Zoe' } })
    expect((await emailRow(viaTpl.body.data.emails[0].email)).html).toStartWith('<h2>Zoe</h2>\n')
    const bad = await send({ to, from, subject: 's', body: 'b', type: 'text' })
    expect(bad.status).toBe(422)
    expect(bad.body.error.errors[0].field).toBe('type')
  })

  test('content, sender and recipients are validated (422), unverified senders refused (403), nothing written', async () => {
    const { emails } = env.store.t
    const before = (await env.store.db.select().from(emails).where(eq(emails.projectId, p.id))).length
    const to = `v.${rnd()}@dest.test`
    const missing = await send({ to, from, subject: 'only subject' })
    expect(missing.status).toBe(422)
    expect(missing.body.error.code).toBe('VALIDATION_ERROR')
    expect(missing.body.error.errors.map((e: { field: string }) => e.field)).toEqual(['body'])
    const noFrom = await send({ to, subject: 's', body: '<p>b</p>' })
    expect(noFrom.status).toBe(422)
    expect(noFrom.body.error.errors[0]).toMatchObject({ field: 'from', code: 'required' })
    expect((await send({ to: 'not-an-email', from, subject: 's', body: 'b' })).status).toBe(422)
    expect((await send({ to: [], from, subject: 's', body: 'b' })).status).toBe(422)
    expect((await send({ from, subject: 's', body: 'b' })).status).toBe(422)
    expect((await send({ to, from, subject: 'a\r\nBcc: x@evil.test', body: 'b' })).status).toBe(422)
    expect((await send({ to, from, subject: 'x'.repeat(999), body: 'b' })).status).toBe(422)
    expect((await send({ to, from, subject: '{{#if}}', body: 'b' })).status).toBe(422)
    expect((await send({ to, from: 'nobody', subject: 's', body: 'b' })).status).toBe(422)
    expect((await send({ to, from, subject: 's', body: 'b', data: 'abc' })).status).toBe(422)
    const unverified = await send({ to, from: 'me@not-verified.test', subject: 's', body: 'b' })
    expect(unverified.status).toBe(403)
    expect(unverified.body.error.code).toBe('INTERNAL_SERVER_ERROR')
    expect((await env.store.db.select().from(emails).where(eq(emails.projectId, p.id))).length).toBe(before)
    expect(await contact(p.id, to)).toBeNull()
  })

  test('data beyond the limits of contact data: 422 VALIDATION_ERROR (field data), nothing written for any recipient', async () => {
    const a = `a.${rnd()}@dest.test`
    const b = `b.${rnd()}@dest.test`
    const half = 'x'.repeat(40_000)
    expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email: b, data: { big: half } } })).status).toBe(201)
    const deep = await send({ to: a, from, subject: 's', body: 'b', data: JSON.parse(`${'{"v":'.repeat(11)}1${'}'.repeat(11)}`) })
    expect(deep.status).toBe(422)
    expect(deep.body.error.errors[0]).toMatchObject({ field: 'data', code: 'too_deep' })
    // The second recipient's stored data would grow past 64 KB: the whole request fails, the first recipient included.
    const grow = await send({ to: [a, b], from, subject: 's', body: 'b', data: { more: half } })
    expect(grow.status).toBe(422)
    expect(grow.body.error.errors[0]).toMatchObject({ field: 'data', code: 'too_big' })
    expect(await contact(p.id, a)).toBeNull()
    expect((await contact(p.id, b))?.data).toEqual({ big: half })
  })

  test('header injection and reserved or oversized headers are refused with 422', async () => {
    const to = `h.${rnd()}@dest.test`
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'X-Evil': 'a\r\nBcc: victim@example.org' }, 'header_injection'],
      [{ 'X-Evil\r\nBcc': 'x' }, 'header_injection'],
      [{ 'X-Evil': 'line\nbreak' }, 'header_injection'],
      [{ 'X Bad Name': 'x' }, 'invalid_header'],
      [{ From: 'ceo@example.org' }, 'reserved_header'],
      [{ 'X-Long': 'x'.repeat(999) }, 'too_big'],
    ]
    for (const [headers, code] of cases) {
      const res = await send({ to, from, subject: 's', body: 'b', headers })
      expect(res.status).toBe(422)
      expect(res.body.error.errors[0].code).toBe(code)
    }
    expect((await send({ to, from, subject: 's', body: 'b', headers: { 'X-Ok': 'x'.repeat(998) } })).status).toBe(200)
  })

  test('trust and routing headers are refused with 422 naming the header; List-Unsubscribe only on transactional mail (issue 35, item 11)', async () => {
    const to = `trust.${rnd()}@dest.test`
    for (const name of ['Feedback-ID', 'Authentication-Results', 'ARC-Seal', 'Received-SPF', 'Resent-From', 'resent-sender', 'Return-Path', 'Received', 'Delivered-To', 'X-Mailctl-Relay', 'Sender', 'Errors-To']) {
      const res = await send({ to, from, subject: 's', body: 'b', headers: { [name]: `${other.id}:x:y` } })
      expect({ name, status: res.status }).toEqual({ name, status: 422 })
      expect(res.body.error.errors[0]).toMatchObject({ field: `headers.${name}`, code: 'reserved_header' })
      expect(res.body.error.message).toContain(name)
    }
    // Transactional mail may carry its own List-Unsubscribe; marketing mail has the server's one-click link.
    expect((await send({ to, from, subject: 's', body: 'b', headers: { 'List-Unsubscribe': '<mailto:u@example.org>' } })).status).toBe(200)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const tpl = await createTemplate(ctx, { name: 'Promo', subject: 'Promo', body: '<p>sale</p>', from, type: 'MARKETING' })
    const marketing = await send({ to, template: tpl.id, headers: { 'List-Unsubscribe': '<https://evil.example/u>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } })
    expect(marketing.status).toBe(422)
    expect(marketing.body.error.errors.map((e: { field: string }) => e.field).sort()).toEqual(['headers.List-Unsubscribe', 'headers.List-Unsubscribe-Post'])
  })

  test('through the relay: a trust or routing header a client wrote refuses the message, naming it; traces are dropped', () => {
    const line = (l: string) => ({ key: l.slice(0, l.indexOf(':')).toLowerCase(), line: l })
    for (const l of ['Feedback-ID: 1:other-project:x', 'Authentication-Results: mx.example; dkim=pass', 'Resent-From: ceo@other-tenant.test', 'X-Mailctl-Relay: x']) {
      expect(() => carriedHeaders([line(l)])).toThrow(l.slice(0, l.indexOf(':')))
    }
    expect(carriedHeaders([line('Received: from a by b'), line('DKIM-Signature: v=1'), line('X-Ok: yes'), line('List-Unsubscribe: <mailto:u@example.org>')])).toEqual({ 'X-Ok': 'yes', 'List-Unsubscribe': '<mailto:u@example.org>' })
  })

  test('attachments: at most 10 (422), 10 MB in total (413), valid base64, inline ones need a contentId', async () => {
    const to = `att.${rnd()}@dest.test`
    const one = { filename: 'a.txt', content: Buffer.from('hello').toString('base64'), contentType: 'text/plain' }
    const eleven = await send({ to, from, subject: 's', body: 'b', attachments: Array.from({ length: 11 }, () => one) })
    expect(eleven.status).toBe(422)
    const big = Buffer.alloc(5 * 1024 * 1024 + 1, 7).toString('base64')
    const tooBig = await send({ to, from, subject: 's', body: 'b', attachments: [{ filename: 'a.bin', content: big }, { filename: 'b.bin', content: big }] })
    expect(tooBig.status).toBe(413)
    expect(tooBig.body.error.code).toBe('PAYLOAD_TOO_LARGE')
    const notB64 = await send({ to, from, subject: 's', body: 'b', attachments: [{ filename: 'a.txt', content: 'not base64 !!' }] })
    expect(notB64.status).toBe(422)
    const inline = await send({ to, from, subject: 's', body: 'b', attachments: [{ filename: 'a.png', content: one.content, disposition: 'inline' }] })
    expect(inline.status).toBe(422)
    expect(inline.body.error.errors[0].field).toBe('attachments.0.contentId')
    const ok = await send({ to, from, subject: 's', body: 'b', attachments: Array.from({ length: 10 }, (_, i) => ({ ...one, filename: `f${i}.txt` })) })
    expect(ok.status).toBe(200)
    const row = await emailRow(ok.body.data.emails[0].email)
    expect(row.attachments).toHaveLength(10)
    expect(row.attachments?.[0]).toMatchObject({ filename: 'f0.txt', contentType: 'text/plain', disposition: 'attachment', size: 5 })
  })

  test('many concurrent sends all complete (more than the PostgreSQL pool has connections)', async () => {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => send({ to: `conc${i}.${rnd()}@dest.test`, from, subject: 's', body: '<p>b {{unsubscribeUrl}}</p>' })))
    expect(results.map((r) => r.status)).toEqual(Array(40).fill(200))
    expect(new Set(results.map((r) => r.body.data.emails[0].email)).size).toBe(40)
  })

  test('subscribed: new contacts default to false; a change emits contact.subscribed / contact.unsubscribed', async () => {
    const to = `s.${rnd()}@dest.test`
    await send({ to, from, subject: 's', body: 'b' })
    expect((await contact(p.id, to))?.subscribed).toBe(false)
    await send({ to, from, subject: 's', body: 'b', subscribed: true })
    const c = must(await contact(p.id, to), 'the contact')
    expect(c.subscribed).toBe(true)
    await send({ to, from, subject: 's', body: 'b' })
    expect((await contact(p.id, to))?.subscribed).toBe(true)
    await send({ to, from, subject: 's', body: 'b', subscribed: false })
    const { events } = env.store.t
    const names = (await env.store.db.select().from(events).where(eq(events.contactId, c.id))).map((e) => e.name).sort()
    expect(names).toEqual(['contact.subscribed', 'contact.unsubscribed'])
  })

  test('Idempotency-Key: a reused key answers 409 IDEMPOTENCY_KEY_REUSED and sends nothing again', async () => {
    const to = `idem.${rnd()}@dest.test`
    const key = `k-${rnd()}`
    const first = await send({ to, from, subject: 's', body: 'b' }, { headers: { 'Idempotency-Key': key } })
    expect(first.status).toBe(200)
    const again = await send({ to, from, subject: 's', body: 'b' }, { headers: { 'Idempotency-Key': key } })
    expect(again.status).toBe(409)
    expect(again.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED')
    const { emails } = env.store.t
    expect((await env.store.db.select().from(emails).where(and(eq(emails.projectId, p.id), eq(emails.toAddress, to)))).length).toBe(1)
    // A 4xx releases the key: the corrected request goes through.
    const k2 = `k-${rnd()}`
    expect((await send({ to, subject: 's', body: 'b' }, { headers: { 'Idempotency-Key': k2 } })).status).toBe(422)
    expect((await send({ to, from, subject: 's', body: 'b' }, { headers: { 'Idempotency-Key': k2 } })).status).toBe(200)
    expect((await send({ to, from, subject: 's', body: 'b' }, { headers: { 'Idempotency-Key': 'bad\u0001key' } })).status).toBe(422)
  })

  test('suppressed addresses get no email and are reported in data.emails with status suppressed', async () => {
    const blocked = `blocked.${rnd()}@dest.test`
    const fine = `fine.${rnd()}@dest.test`
    const add = await env.request('POST', '/suppressions', { key: p.secretKey, body: { email: blocked.toUpperCase(), note: 'asked by phone' } })
    expect(add.status).toBe(200)
    expect(add.body).toMatchObject({ email: blocked, reason: 'manual', detail: 'asked by phone' })
    const res = await send({ to: [blocked, fine], from, subject: 's', body: 'b' })
    expect(res.status).toBe(200)
    expect(res.body.data.emails).toEqual([
      { contact: { id: expect.any(String), email: blocked }, status: 'suppressed', reason: 'manual' },
      { contact: { id: expect.any(String), email: fine }, email: expect.any(String), status: 'queued' },
    ])
    expect(res.body.data.suppressed).toBeUndefined()
    const { emails } = env.store.t
    expect(await env.store.db.select().from(emails).where(eq(emails.toAddress, blocked))).toEqual([])
    // The suppression belongs to the project: another project still sends to the address.
    const theirs = await send({ to: blocked, from: other.from, subject: 's', body: 'b' }, { key: other.secretKey })
    expect(theirs.body.data.emails).toHaveLength(1)
  })

  test('security: no key 401, public key 401 INVALID_API_KEY, another project\'s email 404', async () => {
    const body = { to: `sec.${rnd()}@dest.test`, from, subject: 's', body: 'b' }
    const none = await send(body, { key: null })
    expect(none.status).toBe(401)
    const pub = await send(body, { key: p.publicKey })
    expect(pub.status).toBe(401)
    expect(pub.body.error.code).toBe('INVALID_API_KEY')
    const wrong = await send(body, { key: `sk_${'0'.repeat(64)}` })
    expect(wrong.status).toBe(401)
    const ok = await send(body)
    const id = ok.body.data.emails[0].email
    const mine = await env.request('GET', `/emails/${id}`, { key: p.secretKey })
    expect(mine.status).toBe(200)
    expect(mine.body).toMatchObject({ id, status: 'PENDING', to: body.to, from, subject: 's' })
    expect((await env.request('GET', `/emails/${id}`, { key: other.secretKey })).status).toBe(404)
    expect((await env.request('GET', `/emails/${id}`, { key: p.publicKey })).status).toBe(401)
    expect((await env.request('GET', '/activity', { key: p.publicKey })).status).toBe(401)
  })

  test('GET /emails/:id and the activity feed show the delivery state once delivered', async () => {
    const q = await projectWithDomain(env, dns, `act-${rnd()}.test`)
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const r = await env.request('POST', '/v1/send', { key: q.secretKey, body: { to: `act${i}@dest.test`, from: q.from, subject: `n${i}`, body: 'b' } })
      ids.push(r.body.data.emails[0].email)
    }
    await pipelineFor(env).drain()
    for (const id of ids) {
      const one = await env.request('GET', `/emails/${id}`, { key: q.secretKey })
      expect(one.status).toBe(200)
      expect(one.body).toMatchObject({ id, status: 'DELIVERED', attempts: 1, deliveredTo: `mx.dest.test[127.0.0.1]:${sink.port}` })
      expect(Date.parse(one.body.deliveredAt)).toBeGreaterThan(0)
    }
    const feed = await env.request('GET', '/activity', { key: q.secretKey })
    expect(feed.status).toBe(200)
    const items = (feed.body.data as Array<{ kind: string; id?: string; status?: string }>).filter((i) => i.kind === 'email')
    expect(items.map((i) => i.id).sort()).toEqual([...ids].sort())
    expect(items.every((i) => i.status === 'DELIVERED')).toBe(true)
    expect((await env.request('GET', `/emails/${ids[0]}`, { key: other.secretKey })).status).toBe(404)
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
