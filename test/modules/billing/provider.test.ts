import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { loadConfig } from '../../../src/config'
import { formEncode, signPayload } from '../../../src/modules/billing/provider'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../../helpers/accounts'
import { forEachStore, type TestEnv } from '../../helpers/env'

/**
 * Payment-provider billing against a fake Stripe on 127.0.0.1: it records every request (method, path,
 * query, the form-encoded body, the Authorization header), refuses a wrong secret key like Stripe (401 with
 * an error object), and answers checkout sessions, portal sessions and invoice lists. Webhook deliveries are
 * signed here with the configured webhook secret, as Stripe signs them.
 */

const SECRET_KEY = 'sk_test_mailctl_fake'
const WEBHOOK_SECRET = 'whsec_mailctl_test'
const PRICE = 'price_pro_monthly'

interface Recorded { method: string; path: string; query: URLSearchParams; form: URLSearchParams; authorization: string | null; contentType: string | null }
const recorded: Recorded[] = []
let failNext: { status: number; body: string } | null = null
let n = 0
const invoicesOf: Record<string, Array<Record<string, unknown>>> = {
  cus_fake_1: [1, 2, 3].map((i) => ({
    id: `in_${i}`, object: 'invoice', number: `MAIL-000${i}`, status: 'paid', currency: 'eur', total: 1900, amount_due: 1900, amount_paid: 1900,
    created: 1_760_000_000 - i * 2_592_000, period_start: 1_760_000_000 - (i + 1) * 2_592_000, period_end: 1_760_000_000 - i * 2_592_000,
    hosted_invoice_url: `https://invoice.fake/in_${i}`, invoice_pdf: `https://invoice.fake/in_${i}.pdf`,
  })),
}

const json = (body: unknown, status = 200) => Response.json(body, { status })
const fakeProvider = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const u = new URL(req.url)
    const form = new URLSearchParams(req.method === 'POST' ? await req.text() : '')
    recorded.push({ method: req.method, path: u.pathname, query: u.searchParams, form, authorization: req.headers.get('authorization'), contentType: req.headers.get('content-type') })
    if (failNext) {
      const f = failNext
      failNext = null
      return new Response(f.body, { status: f.status, headers: { 'content-type': 'application/json' } })
    }
    if (req.headers.get('authorization') !== `Bearer ${SECRET_KEY}`) return json({ error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } }, 401)
    if (req.method === 'POST' && u.pathname === '/v1/checkout/sessions') {
      const id = `cs_test_${++n}`
      return json({ id, object: 'checkout.session', url: `https://checkout.fake/c/pay/${id}`, mode: form.get('mode') })
    }
    if (req.method === 'POST' && u.pathname === '/v1/billing_portal/sessions') {
      return json({ id: `bps_${++n}`, object: 'billing_portal.session', customer: form.get('customer'), url: `https://billing.fake/p/session/${n}` })
    }
    if (req.method === 'GET' && u.pathname === '/v1/invoices') {
      const all = invoicesOf[u.searchParams.get('customer') ?? ''] ?? []
      const after = u.searchParams.get('starting_after')
      const from = after ? all.findIndex((i) => i.id === after) + 1 : 0
      const limit = Number(u.searchParams.get('limit') ?? 10)
      return json({ object: 'list', data: all.slice(from, from + limit), has_more: from + limit < all.length, url: '/v1/invoices' })
    }
    return json({ error: { message: `Unrecognized request URL (${req.method}: ${u.pathname})` } }, 404)
  },
})
afterAll(() => fakeProvider.stop(true))

const closedPort = (() => {
  const s = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
  const port = s.port
  s.stop(true)
  return port
})()

const settings = (url: string) => ({ billingProviderUrl: url, billingSecretKey: SECRET_KEY, billingWebhookSecret: WEBHOOK_SECRET, billingPriceId: PRICE })
const nowUnix = () => Math.floor(Date.now() / 1000)
let eventN = 0

/** A provider event delivered to the webhook, signed with `secret` at `t`. */
function deliver(env: TestEnv, type: string, object: Record<string, unknown>, opts: { id?: string; created?: number; t?: number; secret?: string; header?: string | null; provider?: string } = {}) {
  const id = opts.id ?? `evt_${++eventN}_${Math.random().toString(36).slice(2, 8)}`
  const payload = JSON.stringify({ id, object: 'event', type, created: opts.created ?? nowUnix(), data: { object } })
  return { id, payload, res: post(env, payload, opts.header === undefined ? signPayload(payload, opts.secret ?? WEBHOOK_SECRET, opts.t ?? nowUnix()) : opts.header, opts.provider) }
}

async function post(env: TestEnv, payload: string, signature: string | null, provider = 'stripe') {
  return env.request('POST', `/webhooks/incoming/${provider}`, { raw: payload, headers: { 'content-type': 'application/json', ...(signature === null ? {} : { 'stripe-signature': signature }) } })
}

forEachStore('payment-provider billing', (env) => {
  let owner: TestUser
  let admin: TestUser
  let member: TestUser
  let stranger: TestUser
  let p: { id: string; secretKey: string }
  let q: { id: string; secretKey: string }

  beforeAll(async () => {
    owner = await verifiedUser(env, 'owner')
    p = await ownedProject(env, owner)
    admin = await memberOf(env, owner, p.id, 'ADMIN')
    member = await memberOf(env, owner, p.id, 'MEMBER')
    stranger = await verifiedUser(env, 'stranger')
    q = await ownedProject(env, stranger)
  }, 60_000)

  const call = (method: 'GET' | 'POST', what: string, u: TestUser | null, id = p.id, query = '') =>
    env.request(method, `/users/@me/projects/${id}/${what}${query}`, { cookie: u?.cookie })
  const subscription = async (id = p.id, u: TestUser = id === p.id ? owner : stranger) => (await call('GET', 'billing-consumption', u, id)).body.subscription

  test('/config reports billing enabled', async () => {
    expect((await env.request('GET', '/config')).body.features.billing).toEqual({ enabled: true })
  })

  test('checkout: a form-encoded, Bearer-authenticated session for the price, the project and the user; OWNER and ADMIN only', async () => {
    const from = recorded.length
    const res = await call('POST', 'checkout', owner)
    expect(res.status).toBe(200)
    expect(res.body.url).toMatch(/^https:\/\/checkout\.fake\/c\/pay\/cs_test_\d+$/)
    expect(res.body.id).toMatch(/^cs_test_/)
    const [r] = recorded.slice(from)
    expect(r).toMatchObject({ method: 'POST', path: '/v1/checkout/sessions', authorization: `Bearer ${SECRET_KEY}`, contentType: 'application/x-www-form-urlencoded' })
    expect(Object.fromEntries(r.form)).toEqual({
      mode: 'subscription',
      'line_items[0][price]': PRICE,
      'line_items[0][quantity]': '1',
      success_url: `http://localhost:3000/app/p/${p.id}/settings?billing=success`,
      cancel_url: `http://localhost:3000/app/p/${p.id}/settings?billing=cancelled`,
      client_reference_id: p.id,
      customer_email: owner.email,
      'metadata[projectId]': p.id,
      'subscription_data[metadata][projectId]': p.id,
    })
    expect((await call('POST', 'checkout', admin)).status).toBe(200)

    const count = recorded.length
    const byMember = await call('POST', 'checkout', member)
    expect(byMember.status).toBe(403)
    expect(byMember.body.error.code).toBe('FORBIDDEN')
    expect((await call('POST', 'checkout', stranger)).status).toBe(404)
    // Another project's id: the owner of p is not a member of q.
    expect((await call('POST', 'checkout', owner, q.id)).status).toBe(404)
    expect((await call('POST', 'checkout', null)).status).toBe(401)
    expect((await env.request('POST', `/users/@me/projects/${p.id}/checkout`, { key: p.secretKey })).status).toBe(401)
    // None of the refused requests reached the provider.
    expect(recorded.length).toBe(count)
  })

  test('before the first checkout completes: the portal is 409, invoices are empty, there is no subscription', async () => {
    const portal = await call('POST', 'billing-portal', owner)
    expect(portal.status).toBe(409)
    expect(portal.body.error.code).toBe('CONFLICT')
    const inv = await call('GET', 'billing-invoices', owner)
    expect(inv.status).toBe(200)
    expect(inv.body).toEqual({ invoices: [], cursor: null, hasMore: false })
    expect(await subscription()).toBeNull()
  })

  test('webhook: checkout.session.completed subscribes the project; then portal and invoices reach the provider for its customer', async () => {
    const { res } = deliver(env, 'checkout.session.completed', { id: 'cs_test_1', object: 'checkout.session', client_reference_id: p.id, customer: 'cus_fake_1', subscription: 'sub_fake_1', payment_status: 'paid', metadata: { projectId: p.id } })
    const hook = await res
    expect(hook.status).toBe(200)
    expect(hook.body).toEqual({ received: true, duplicate: false, outcome: 'applied' })
    expect(await subscription()).toMatchObject({ status: 'active', priceId: PRICE, cancelAtPeriodEnd: false })
    // q is another project: untouched.
    expect(await subscription(q.id)).toBeNull()

    const again = await call('POST', 'checkout', owner)
    expect(again.status).toBe(409)
    expect(again.body.error.message).toContain('billing portal')

    let from = recorded.length
    const portal = await call('POST', 'billing-portal', admin)
    expect(portal.status).toBe(200)
    expect(portal.body.url).toMatch(/^https:\/\/billing\.fake\/p\/session\/\d+$/)
    expect(recorded[from]).toMatchObject({ method: 'POST', path: '/v1/billing_portal/sessions', authorization: `Bearer ${SECRET_KEY}` })
    expect(Object.fromEntries(recorded[from].form)).toEqual({ customer: 'cus_fake_1', return_url: `http://localhost:3000/app/p/${p.id}/settings` })
    expect((await call('POST', 'billing-portal', member)).status).toBe(403)
    expect((await call('POST', 'billing-portal', stranger)).status).toBe(404)

    from = recorded.length
    const first = await call('GET', 'billing-invoices', owner, p.id, '?limit=2')
    expect(first.status).toBe(200)
    expect(recorded[from]).toMatchObject({ method: 'GET', path: '/v1/invoices', authorization: `Bearer ${SECRET_KEY}` })
    expect(recorded[from].query.get('customer')).toBe('cus_fake_1')
    expect(recorded[from].query.get('limit')).toBe('2')
    expect(first.body.hasMore).toBe(true)
    expect(first.body.cursor).toBe('in_2')
    expect(first.body.invoices[0]).toEqual({
      id: 'in_1', number: 'MAIL-0001', status: 'paid', currency: 'eur', total: 1900, amountDue: 1900, amountPaid: 1900,
      createdAt: new Date((1_760_000_000 - 2_592_000) * 1000).toISOString(),
      periodStart: new Date((1_760_000_000 - 2 * 2_592_000) * 1000).toISOString(), periodEnd: new Date((1_760_000_000 - 2_592_000) * 1000).toISOString(),
      hostedInvoiceUrl: 'https://invoice.fake/in_1', pdfUrl: 'https://invoice.fake/in_1.pdf',
    })
    const next = await call('GET', 'billing-invoices', admin, p.id, `?limit=2&cursor=${first.body.cursor}`)
    expect(recorded.at(-1)?.query.get('starting_after')).toBe('in_2')
    expect(next.body.invoices.map((i: { id: string }) => i.id)).toEqual(['in_3'])
    expect(next.body).toMatchObject({ hasMore: false, cursor: null })
    expect((await call('GET', 'billing-invoices', owner, p.id, '?limit=0')).status).toBe(400)
    expect((await call('GET', 'billing-invoices', member)).status).toBe(403)
    expect((await call('GET', 'billing-invoices', stranger)).status).toBe(404)
    expect((await call('GET', 'billing-invoices', owner, q.id)).status).toBe(404)
  })

  test('webhook: subscription updates, a paid invoice, an older event delivered late, cancellation', async () => {
    const t0 = nowUnix()
    const periodEnd = t0 + 30 * 86400
    const sub = (status: string, extra: Record<string, unknown> = {}) => ({
      id: 'sub_fake_1', object: 'subscription', customer: 'cus_fake_1', status, metadata: { projectId: p.id }, cancel_at_period_end: false,
      items: { data: [{ price: { id: PRICE }, current_period_end: periodEnd }] }, ...extra,
    })
    expect((await deliver(env, 'customer.subscription.updated', sub('past_due', { cancel_at_period_end: true }), { created: t0 + 1 }).res).status).toBe(200)
    expect(await subscription()).toMatchObject({ status: 'past_due', cancelAtPeriodEnd: true, currentPeriodEnd: new Date(periodEnd * 1000).toISOString() })

    // invoice.paid names only the customer: the project is found through it.
    const paid = await deliver(env, 'invoice.paid', { id: 'in_9', object: 'invoice', customer: 'cus_fake_1', subscription: 'sub_fake_1', status_transitions: { paid_at: t0 + 2 } }, { created: t0 + 2 }).res
    expect(paid.body.outcome).toBe('applied')
    expect(await subscription()).toMatchObject({ status: 'active', lastInvoicePaidAt: new Date((t0 + 2) * 1000).toISOString() })

    // An event created before the last one applied is recorded but changes no state.
    const late = await deliver(env, 'customer.subscription.updated', sub('unpaid'), { created: t0 }).res
    expect(late.status).toBe(200)
    expect((await subscription()).status).toBe('active')

    expect((await deliver(env, 'customer.subscription.deleted', sub('canceled'), { created: t0 + 3 }).res).status).toBe(200)
    expect((await subscription()).status).toBe('canceled')
    // A canceled project may check out again, as the same customer.
    const from = recorded.length
    expect((await call('POST', 'checkout', owner)).status).toBe(200)
    expect(recorded[from].form.get('customer')).toBe('cus_fake_1')
    expect(recorded[from].form.has('customer_email')).toBe(false)
  })

  test('webhook security: missing, malformed, wrong, tampered and stale signatures are refused; a replayed event id changes nothing', async () => {
    const object = { id: 'cs_x', client_reference_id: q.id, customer: 'cus_q', subscription: 'sub_q', payment_status: 'paid' }
    const noHeader = await deliver(env, 'checkout.session.completed', object, { header: null }).res
    expect(noHeader.status).toBe(400)
    expect(noHeader.body.error.code).toBe('BAD_REQUEST')
    expect((await deliver(env, 'checkout.session.completed', object, { header: 'garbage' }).res).status).toBe(400)
    expect((await deliver(env, 'checkout.session.completed', object, { header: `t=${nowUnix()}` }).res).status).toBe(400)
    const wrong = await deliver(env, 'checkout.session.completed', object, { secret: 'whsec_someone_else' }).res
    expect(wrong.status).toBe(403)
    expect(wrong.body.error.code).toBe('FORBIDDEN')
    // A valid signature of another body.
    const signed = deliver(env, 'checkout.session.completed', object)
    await signed.res
    const tampered = await post(env, signed.payload.replace(q.id, p.id), signPayload(signed.payload, WEBHOOK_SECRET, nowUnix()))
    expect(tampered.status).toBe(403)
    const stale = await deliver(env, 'checkout.session.completed', object, { t: nowUnix() - 600 }).res
    expect(stale.status).toBe(403)
    expect(stale.body.error.message).toContain('replay')
    expect((await deliver(env, 'checkout.session.completed', object, { t: nowUnix() + 600 }).res).status).toBe(403)
    expect(await subscription(q.id)).toMatchObject({ status: 'active' })

    // The same event again, freshly signed (a redelivery, or a replay inside the window): 200, duplicate.
    const del = deliver(env, 'customer.subscription.deleted', { id: 'sub_q', customer: 'cus_q', status: 'canceled', metadata: { projectId: q.id } })
    expect((await del.res).body.duplicate).toBe(false)
    expect((await subscription(q.id)).status).toBe('canceled')
    const replay = await post(env, signed.payload, signPayload(signed.payload, WEBHOOK_SECRET, nowUnix()))
    expect(replay.status).toBe(200)
    expect(replay.body).toEqual({ received: true, duplicate: true, outcome: 'duplicate' })
    expect((await subscription(q.id)).status).toBe('canceled')
    const ev = env.store.t.billingEvents
    expect(await env.store.db.select().from(ev).where(eq(ev.id, signed.id))).toHaveLength(1)
  })

  test('webhook: events about no project of this server and unhandled types are acknowledged and ignored; a signed non-event is 400; other providers 404', async () => {
    const stray = await deliver(env, 'customer.subscription.updated', { id: 'sub_other', customer: 'cus_unknown', status: 'active' }).res
    expect(stray.status).toBe(200)
    expect(stray.body.outcome).toBe('ignored')
    const forged = await deliver(env, 'checkout.session.completed', { client_reference_id: 'no-such-project', customer: 'cus_zz' }).res
    expect(forged.body.outcome).toBe('ignored')
    expect((await deliver(env, 'charge.refunded', { id: 'ch_1', customer: 'cus_fake_1' }).res).body.outcome).toBe('ignored')
    const notEvent = 'this is not json'
    expect((await post(env, notEvent, signPayload(notEvent, WEBHOOK_SECRET, nowUnix()))).status).toBe(400)
    const noData = JSON.stringify({ id: 'evt_no_data', type: 'invoice.paid', created: nowUnix() })
    expect((await post(env, noData, signPayload(noData, WEBHOOK_SECRET, nowUnix()))).status).toBe(400)
    expect((await deliver(env, 'invoice.paid', { customer: 'cus_fake_1' }, { provider: 'paypal' }).res).status).toBe(404)
  })

  test('webhook: a signed event whose fields hold a NUL, or whose time is outside the years 0001-9999, is answered, never a 500', async () => {
    for (const object of [{ id: 'sub_nul', customer: 'cus_\u0000x', status: 'active' }, { id: 'sub_\ud800', customer: 'cus_fake_1', status: 'act\u0000ive' }]) {
      const r = await deliver(env, 'customer.subscription.updated', object).res
      expect(r.status).toBe(200)
    }
    for (const created of [1e308, -1e308, 253402300800]) {
      const r = await deliver(env, 'invoice.paid', { customer: 'cus_fake_1' }, { created }).res
      expect(r.status).toBe(400)
    }
  })

  test('the provider refusing a request, or answering garbage, is 502 BAD_GATEWAY in the envelope, never a 500', async () => {
    failNext = { status: 400, body: JSON.stringify({ error: { type: 'invalid_request_error', message: `No such price: '${PRICE}'` } }) }
    const refused = await call('POST', 'billing-portal', owner)
    expect(refused.status).toBe(502)
    expect(refused.body.success).toBe(false)
    expect(refused.body.error).toMatchObject({ code: 'BAD_GATEWAY', statusCode: 502, details: { providerStatus: 400 } })
    expect(refused.body.error.message).toContain('No such price')
    expect(refused.body.error.message).not.toContain(SECRET_KEY)
    failNext = { status: 500, body: '<html>oops</html>' }
    expect((await call('GET', 'billing-invoices', owner)).status).toBe(502)
    failNext = { status: 200, body: 'not json' }
    expect((await call('GET', 'billing-invoices', owner)).status).toBe(502)
    failNext = { status: 200, body: JSON.stringify({ id: 'cs_no_url' }) }
    await env.request('POST', `/users/@me/projects/${q.id}/checkout`, { cookie: stranger.cookie }).then((r) => expect(r.status).toBe(502))
  })
}, settings(`http://127.0.0.1:${fakeProvider.port}`))

forEachStore('payment-provider billing, provider down', (env) => {
  test('checkout, portal and invoices answer 502 BAD_GATEWAY when the provider cannot be reached; the webhook still works', async () => {
    const owner = await verifiedUser(env, 'owner')
    const p = await ownedProject(env, owner)
    const checkout = await env.request('POST', `/users/@me/projects/${p.id}/checkout`, { cookie: owner.cookie })
    expect(checkout.status).toBe(502)
    expect(checkout.body.error.code).toBe('BAD_GATEWAY')
    expect(checkout.body.error.message).toContain('could not be reached')
    const hook = deliver(env, 'checkout.session.completed', { client_reference_id: p.id, customer: 'cus_down', subscription: 'sub_down', payment_status: 'paid' })
    expect((await hook.res).status).toBe(200)
    for (const [method, path] of [['POST', 'billing-portal'], ['GET', 'billing-invoices']] as const) {
      const res = await env.request(method, `/users/@me/projects/${p.id}/${path}`, { cookie: owner.cookie })
      expect([path, res.status, res.body.error.code]).toEqual([path, 502, 'BAD_GATEWAY'])
    }
  })
}, settings(`http://127.0.0.1:${closedPort}`))

test('billing settings are all or nothing, and named when missing', () => {
  expect(() => loadConfig({ env: { MAILCTL_BILLING_SECRET_KEY: 'sk_x', MAILCTL_BILLING_PRICE_ID: 'price_x' } })).toThrow('MAILCTL_BILLING_WEBHOOK_SECRET')
  expect(() => loadConfig({ env: { MAILCTL_BILLING_SECRET_KEY: 'sk_x', MAILCTL_BILLING_WEBHOOK_SECRET: 'whsec' } })).toThrow('MAILCTL_BILLING_PRICE_ID')
  expect(() => loadConfig({ env: { MAILCTL_BILLING_WEBHOOK_SECRET: 'whsec' } })).toThrow('MAILCTL_BILLING_SECRET_KEY')
  expect(() => loadConfig({ env: { MAILCTL_BILLING_PROVIDER_URL: 'not a url' } })).toThrow('MAILCTL_BILLING_PROVIDER_URL')
  const c = loadConfig({ env: {} })
  expect(c.billingProviderUrl).toBe('https://api.stripe.com')
  expect(c.billingSecretKey).toBeNull()
})

test('formEncode writes nested objects and arrays as Stripe reads them', () => {
  expect(formEncode({ a: 1, b: { c: 'x y', d: [{ e: true }] }, skip: null, s: ['p', 'q'] })).toBe('a=1&b%5Bc%5D=x+y&b%5Bd%5D%5B0%5D%5Be%5D=true&s%5B0%5D=p&s%5B1%5D=q')
})
