import { afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { ctxFor } from '../../../src/deps'
import { AppError } from '../../../src/errors'
import { insertTestDomain } from '../../helpers/domains'
import { getTemplate } from '../../../src/modules/templates/service'
import { registerTemplateUsageSource } from '../../../src/modules/templates/usage'
import { unwireConsumers, wireConsumers } from '../../../src/main'
import type { NewProject } from '../../../src/modules/projects/service'

/** A domain row written directly (the DNS-driven verification is the domains module's own test). */
async function addDomain(env: TestEnv, projectId: string, domain: string, verified: boolean) {
  return (await insertTestDomain(env, projectId, domain, { verified })).id
}

const valid = (over: Record<string, unknown> = {}) => ({
  name: 'Welcome', description: 'Sent after signup', subject: 'Welcome {{firstName}}', body: '<p>Hello {{firstName}}</p>',
  from: 'hello@example.com', fromName: 'Example', replyTo: 'support@example.com', type: 'TRANSACTIONAL', ...over,
})

forEachStore('templates API', (env) => {
  let p: NewProject
  let q: NewProject
  const sk = () => p.secretKey

  beforeAll(async () => {
    p = await env.project()
    q = await env.project()
    await addDomain(env, p.id, 'example.com', true)
    await addDomain(env, p.id, 'pending.org', false)
    await addDomain(env, q.id, 'other.net', true)
  })

  async function create(over: Record<string, unknown> = {}, key = sk()) {
    const r = await env.request('POST', '/templates', { key, body: valid(over) })
    expect(r.status).toBe(201)
    return r.body as Record<string, unknown> & { id: string }
  }

  async function count(projectKey = sk()) {
    return (await env.request('GET', '/templates?pageSize=1', { key: projectKey })).body.total as number
  }

  describe('POST /templates', () => {
    test('creates a template: 201 with every field; from and replyTo lower-cased; type defaults to MARKETING', async () => {
      const r = await env.request('POST', '/templates', { key: sk(), body: { name: 'T', subject: 'S', body: '<p>B</p>', from: '  News@Example.COM ', replyTo: 'Reply@Example.com' } })
      expect(r.status).toBe(201)
      expect(r.body).toMatchObject({ name: 'T', description: null, subject: 'S', body: '<p>B</p>', from: 'news@example.com', fromName: null, replyTo: 'reply@example.com', type: 'MARKETING', projectId: p.id })
      expect(r.body.id).toMatch(/^[0-9a-f-]{36}$/)
      expect(r.body.createdAt).toBe(r.body.updatedAt)
      expect(new Date(r.body.createdAt).toISOString()).toBe(r.body.createdAt)
      const full = await create()
      expect(full).toMatchObject({ name: 'Welcome', description: 'Sent after signup', fromName: 'Example', replyTo: 'support@example.com', type: 'TRANSACTIONAL' })
      const got = await env.request('GET', `/templates/${full.id}`, { key: sk() })
      expect(got.body).toEqual(full)
    })

    test('missing from answers the flat 400 {error}; so do null and ""', async () => {
      for (const from of [undefined, null, '', '   ']) {
        const body: Record<string, unknown> = valid()
        if (from === undefined) delete body.from
        else body.from = from
        const r = await env.request('POST', '/templates', { key: sk(), body })
        expect(r.status).toBe(400)
        expect(Object.keys(r.body)).toEqual(['error'])
        expect(r.body.error).toMatch(/from is required/)
      }
    })

    test('an unverified, pending or foreign sender domain answers 403 (code INTERNAL_SERVER_ERROR) and writes nothing', async () => {
      const before = await count()
      for (const from of ['a@unknown.io', 'a@pending.org', 'a@other.net', 'a@notexample.com']) {
        const r = await env.request('POST', '/templates', { key: sk(), body: valid({ from }) })
        expect(r.status).toBe(403)
        expect(r.body.error.code).toBe('INTERNAL_SERVER_ERROR')
        expect(r.body.error.statusCode).toBe(403)
      }
      expect(await count()).toBe(before)
    })

    test('a subdomain of a verified domain is refused (403) unless the domain allows subdomains', async () => {
      const r = await env.request('POST', '/templates', { key: sk(), body: valid({ from: 'boss@payroll.example.com' }) })
      expect(r.status).toBe(403)
      expect(r.body.error.message).toContain('payroll.example.com')
    })

    test('a body or subject that does not compile is a 422 at save time with the Handlebars message', async () => {
      const before = await count()
      let r = await env.request('POST', '/templates', { key: sk(), body: valid({ body: '<p>{{#if vip}}VIP</p>' }) })
      expect(r.status).toBe(422)
      expect(r.body.error.code).toBe('VALIDATION_ERROR')
      expect(r.body.error.errors).toEqual([expect.objectContaining({ field: 'body', code: 'invalid_template' })])
      expect(r.body.error.errors[0].message).toMatch(/Parse error on line 1/)
      r = await env.request('POST', '/templates', { key: sk(), body: valid({ subject: 'Hi {{name}', body: '{{> footer}}' }) })
      expect(r.status).toBe(422)
      expect(r.body.error.errors.map((e: { field: string }) => e.field)).toEqual(['subject', 'body'])
      r = await env.request('POST', '/templates', { key: sk(), body: valid({ body: '{{helperThatDoesNotExist name}}' }) })
      expect(r.status).toBe(422)
      expect(r.body.error.errors[0].message).toMatch(/unknown helper helperThatDoesNotExist/)
      // A compile error comes before the domain check.
      r = await env.request('POST', '/templates', { key: sk(), body: valid({ body: '{{#each}}{{/each}}', from: 'a@unknown.io' }) })
      expect(r.status).toBe(422)
      expect(await count()).toBe(before)
    })

    test('field validation: exact 422 fields and codes', async () => {
      const cases: Array<[Record<string, unknown>, string, string]> = [
        [{ name: undefined }, 'name', 'required'],
        [{ name: '' }, 'name', 'too_small'],
        [{ subject: undefined }, 'subject', 'required'],
        [{ subject: 'line\r\nBcc: x@y.z' }, 'subject', 'invalid_string'],
        [{ subject: 'x'.repeat(999) }, 'subject', 'too_big'],
        [{ body: '' }, 'body', 'too_small'],
        [{ from: 'not-an-email' }, 'from', 'invalid_string'],
        [{ replyTo: 'nope' }, 'replyTo', 'invalid_enum_value'],
        [{ fromName: 'Evil\r\nBcc: x@y.z' }, 'fromName', 'invalid_enum_value'],
        [{ type: 'NEWSLETTER' }, 'type', 'invalid_enum_value'],
        [{ name: 42 }, 'name', 'invalid_type'],
      ]
      for (const [over, field, code] of cases) {
        const body: Record<string, unknown> = valid(over)
        for (const k of Object.keys(over)) if (over[k] === undefined) delete body[k]
        const r = await env.request('POST', '/templates', { key: sk(), body })
        expect({ over, status: r.status, code: r.body.error?.code }).toEqual({ over, status: 422, code: 'VALIDATION_ERROR' })
        expect(r.body.error.errors[0]).toMatchObject({ field, code })
        expect(r.body.error.errors[0].message).not.toContain('Expected union value')
      }
    })

    test('malformed JSON is 400 BAD_REQUEST; unknown fields are ignored', async () => {
      const r = await env.request('POST', '/templates', { key: sk(), raw: '{"name": ', headers: { 'content-type': 'application/json' } })
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('BAD_REQUEST')
      const t = await create({ projectId: q.id, id: 'forced', createdAt: '2000-01-01T00:00:00.000Z', extra: 1 })
      expect(t.projectId).toBe(p.id)
      expect(t.id).not.toBe('forced')
      expect(t).not.toHaveProperty('extra')
    })
  })

  describe('GET /templates', () => {
    let lp: NewProject
    const names = ['alpha', 'Bravo', 'charlie', 'Delta', 'echo']
    beforeAll(async () => {
      lp = await env.project()
      await addDomain(env, lp.id, 'list.test', true)
      for (const [i, name] of names.entries()) {
        await create({ name, from: 'a@list.test', type: i % 2 ? 'MARKETING' : 'TRANSACTIONAL', description: i === 3 ? 'Has the NEEDLE inside' : null, subject: i === 4 ? 'Subject needle' : `Subject ${name}` }, lp.secretKey)
      }
      await create({ name: '100% off_sale', from: 'a@list.test', subject: 'promo', type: 'HEADLESS' }, lp.secretKey)
    })
    const list = (qs: string) => env.request('GET', `/templates${qs}`, { key: lp.secretKey })

    test('offset pages with page, pageSize, total, totalPages; newest first by default', async () => {
      const r = await list('?pageSize=4')
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ page: 1, pageSize: 4, total: 6, totalPages: 2 })
      expect(r.body.data.map((t: { name: string }) => t.name)).toEqual(['100% off_sale', 'echo', 'Delta', 'charlie'])
      const p2 = await list('?pageSize=4&page=2')
      expect(p2.body.data.map((t: { name: string }) => t.name)).toEqual(['Bravo', 'alpha'])
      const beyond = await list('?pageSize=4&page=9')
      expect(beyond.body).toMatchObject({ data: [], page: 9, total: 6, totalPages: 2 })
      const dflt = await list('')
      expect(dflt.body).toMatchObject({ page: 1, pageSize: 20, total: 6, totalPages: 1 })
    })

    test('pageSize above 100 is clamped to 100', async () => {
      const r = await list('?pageSize=5000')
      expect(r.status).toBe(200)
      expect(r.body.pageSize).toBe(100)
    })

    test('sort by name (case-insensitive), createdAt, updatedAt; dir asc/desc; unknown values fall back', async () => {
      const namesOf = async (qs: string) => (await list(qs)).body.data.map((t: { name: string }) => t.name)
      expect(await namesOf('?sort=name&dir=asc')).toEqual(['100% off_sale', 'alpha', 'Bravo', 'charlie', 'Delta', 'echo'])
      expect(await namesOf('?sort=name')).toEqual(['echo', 'Delta', 'charlie', 'Bravo', 'alpha', '100% off_sale'])
      expect(await namesOf('?sort=createdAt&dir=asc')).toEqual(['alpha', 'Bravo', 'charlie', 'Delta', 'echo', '100% off_sale'])
      expect(await namesOf('?sort=bogus&dir=sideways')).toEqual(await namesOf('?sort=createdAt&dir=desc'))
      const all = (await list('?sort=createdAt&dir=asc')).body.data
      const upd = await env.request('PATCH', `/templates/${all[0].id}`, { key: lp.secretKey, body: { description: 'touched' } })
      expect(upd.status).toBe(200)
      expect((await namesOf('?sort=updatedAt'))[0]).toBe('alpha')
      expect((await namesOf('?sort=updatedAt&dir=asc'))[0]).not.toBe('alpha')
    })

    test('type filter; an unknown type is 400 BAD_REQUEST', async () => {
      const r = await list('?type=TRANSACTIONAL&sort=name&dir=asc')
      expect(r.body.data.map((t: { name: string }) => t.name)).toEqual(['alpha', 'charlie', 'echo'])
      expect(r.body.total).toBe(3)
      expect((await list('?type=HEADLESS')).body.total).toBe(1)
      const bad = await list('?type=newsletter')
      expect(bad.status).toBe(400)
      expect(bad.body.error.code).toBe('BAD_REQUEST')
    })

    test('search is case-insensitive over name, description and subject; % and _ are literal', async () => {
      const namesOf = async (qs: string) => (await list(qs)).body.data.map((t: { name: string }) => t.name).sort()
      expect(await namesOf('?search=ALPH')).toEqual(['alpha'])
      expect(await namesOf('?search=needle')).toEqual(['Delta', 'echo'])
      expect(await namesOf('?search=%25')).toEqual(['100% off_sale'])
      expect(await namesOf('?search=_')).toEqual(['100% off_sale'])
      expect(await namesOf('?search=%27%20OR%201%3D1%20--')).toEqual([])
      expect(await namesOf('?search=needle&type=MARKETING')).toEqual(['Delta'])
      expect(await namesOf('?search=%20%20')).toHaveLength(6)
    })

    test('bad page or pageSize is 400 naming the parameter; another project sees none of these', async () => {
      for (const qs of ['?page=0', '?page=abc', '?pageSize=0', '?page=1.5', '?page=1e300', '?pageSize=-5']) {
        const r = await list(qs)
        expect({ qs, status: r.status }).toEqual({ qs, status: 400 })
        expect(r.body.error.code).toBe('BAD_REQUEST')
        expect(r.body.error.errors[0].field).toBe(qs.slice(1, qs.indexOf('=')))
      }
      const other = await env.request('GET', '/templates?search=needle', { key: q.secretKey })
      expect(other.body.total).toBe(0)
    })
  })

  describe('GET, PATCH, DELETE /templates/:id', () => {
    test('GET: 404 for unknown ids and for another project\'s template', async () => {
      const t = await create()
      expect((await env.request('GET', `/templates/${t.id}`, { key: sk() })).status).toBe(200)
      for (const [id, key] of [[t.id, q.secretKey], ['00000000-0000-0000-0000-000000000000', sk()], ['not-a-uuid', sk()]] as const) {
        const r = await env.request('GET', `/templates/${id}`, { key })
        expect(r.status).toBe(404)
        expect(r.body.error.code).toBe('NOT_FOUND')
      }
    })

    test('PATCH updates the given fields, null clears optional ones, updatedAt moves', async () => {
      const t = await create()
      await Bun.sleep(5)
      const r = await env.request('PATCH', `/templates/${t.id}`, { key: sk(), body: { name: 'Renamed', body: '<p>{{#if a}}A{{/if}}</p>', description: null, fromName: null, replyTo: 'NEW@example.com', type: 'HEADLESS' } })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ id: t.id, name: 'Renamed', body: '<p>{{#if a}}A{{/if}}</p>', description: null, fromName: null, replyTo: 'new@example.com', type: 'HEADLESS', subject: t.subject, from: t.from, createdAt: t.createdAt })
      expect(r.body.updatedAt > (t.updatedAt as string)).toBe(true)
      const empty = await env.request('PATCH', `/templates/${t.id}`, { key: sk(), body: {} })
      expect(empty.status).toBe(200)
      expect(empty.body).toEqual(r.body)
    })

    test('PATCH: compile errors are 422, a new unverified sender is 403, and nothing is written', async () => {
      const t = await create()
      let r = await env.request('PATCH', `/templates/${t.id}`, { key: sk(), body: { name: 'X', subject: '{{#with}}{{/with}}' } })
      expect(r.status).toBe(422)
      expect(r.body.error.errors[0].field).toBe('subject')
      r = await env.request('PATCH', `/templates/${t.id}`, { key: sk(), body: { name: 'X', from: 'a@pending.org' } })
      expect(r.status).toBe(403)
      expect(r.body.error.code).toBe('INTERNAL_SERVER_ERROR')
      r = await env.request('PATCH', `/templates/${t.id}`, { key: sk(), body: { from: null } })
      expect(r.status).toBe(422)
      expect((await env.request('GET', `/templates/${t.id}`, { key: sk() })).body).toEqual(t)
      r = await env.request('PATCH', `/templates/${t.id}`, { key: sk(), body: { from: 'Other@Example.com' } })
      expect(r.status).toBe(200)
      expect(r.body.from).toBe('other@example.com')
    })

    test('PATCH: an unchanged sender is not re-checked (renaming still works after the domain lapsed)', async () => {
      const lp = await env.project()
      const domainId = await addDomain(env, lp.id, 'lapse.test', true)
      const t = await create({ from: 'a@lapse.test' }, lp.secretKey)
      const { domains } = env.store.t
      await env.store.tx((db) => db.update(domains).set({ verified: false, updatedAt: new Date() }).where(eq(domains.id, domainId)))
      const r = await env.request('PATCH', `/templates/${t.id}`, { key: lp.secretKey, body: { name: 'still editable', from: 'A@lapse.test' } })
      expect(r.status).toBe(200)
      expect(r.body.name).toBe('still editable')
      expect((await env.request('POST', '/templates', { key: lp.secretKey, body: valid({ from: 'a@lapse.test' }) })).status).toBe(403)
    })

    test('PATCH: another project\'s template is 404 and untouched', async () => {
      const t = await create()
      const r = await env.request('PATCH', `/templates/${t.id}`, { key: q.secretKey, body: { name: 'hijack' } })
      expect(r.status).toBe(404)
      expect((await env.request('GET', `/templates/${t.id}`, { key: sk() })).body.name).toBe('Welcome')
    })

    test('DELETE: 204, then 404; another project\'s id is 404 and not deleted', async () => {
      const t = await create()
      const foreign = await env.request('DELETE', `/templates/${t.id}`, { key: q.secretKey })
      expect(foreign.status).toBe(404)
      expect((await env.request('GET', `/templates/${t.id}`, { key: sk() })).status).toBe(200)
      const r = await env.request('DELETE', `/templates/${t.id}`, { key: sk() })
      expect(r.status).toBe(204)
      expect(r.text).toBe('')
      expect((await env.request('GET', `/templates/${t.id}`, { key: sk() })).status).toBe(404)
      expect((await env.request('DELETE', `/templates/${t.id}`, { key: sk() })).status).toBe(404)
    })
  })

  describe('duplicate and usage', () => {
    // Puts back what the composition root plugs in (workflow steps), not an empty source: under
    // `npm run test:fast` a worker runs other files after this one in the same process.
    afterEach(() => {
      registerTemplateUsageSource('campaigns', null)
      unwireConsumers()
      wireConsumers()
    })

    test('duplicate: 201 with the new template and its new id, named "(copy)"', async () => {
      const t = await create()
      const r = await env.request('POST', `/templates/${t.id}/duplicate`, { key: sk() })
      expect(r.status).toBe(201)
      expect(r.body.id).not.toBe(t.id)
      expect(r.body).toMatchObject({ name: 'Welcome (copy)', subject: t.subject, body: t.body, from: t.from, fromName: t.fromName, replyTo: t.replyTo, type: t.type, description: t.description, projectId: p.id })
      expect((await env.request('GET', `/templates/${r.body.id}`, { key: sk() })).body).toEqual(r.body)
      const long = await create({ name: 'n'.repeat(255) })
      const d = await env.request('POST', `/templates/${long.id}/duplicate`, { key: sk() })
      expect(d.body.name).toHaveLength(255)
      expect(d.body.name.endsWith(' (copy)')).toBe(true)
    })

    test('duplicate: 404 for another project or an unknown id', async () => {
      const t = await create()
      expect((await env.request('POST', `/templates/${t.id}/duplicate`, { key: q.secretKey })).status).toBe(404)
      expect((await env.request('POST', '/templates/nope/duplicate', { key: sk() })).status).toBe(404)
    })

    test('usage: empty lists until campaigns and workflows plug in; 404 for another project', async () => {
      const t = await create()
      const r = await env.request('GET', `/templates/${t.id}/usage`, { key: sk() })
      expect(r.status).toBe(200)
      expect(r.body).toEqual({ templateId: t.id, campaigns: [], workflowSteps: [], inUse: false })
      expect((await env.request('GET', `/templates/${t.id}/usage`, { key: q.secretKey })).status).toBe(404)
    })

    test('usage sources plug in; DELETE is refused with 409 while in use, allowed once only finished campaigns remain', async () => {
      const t = await create()
      const other = await create()
      let steps = [{ workflowId: 'w1', workflowName: 'Onboarding', stepId: 's1', stepName: 'Send welcome', enabled: true }]
      registerTemplateUsageSource('workflowSteps', async (ctx, id) => (ctx.projectId === p.id && id === t.id ? steps : []))
      registerTemplateUsageSource('campaigns', async (_ctx, id) => (id === t.id ? [{ id: 'c1', name: 'Launch', status: 'SENT' }] : []))
      const u = await env.request('GET', `/templates/${t.id}/usage`, { key: sk() })
      expect(u.body).toEqual({ templateId: t.id, campaigns: [{ id: 'c1', name: 'Launch', status: 'SENT' }], workflowSteps: steps, inUse: true })
      const d = await env.request('DELETE', `/templates/${t.id}`, { key: sk() })
      expect(d.status).toBe(409)
      expect(d.body.error.code).toBe('CONFLICT')
      expect(d.body.error.details.workflowSteps).toEqual(steps)
      expect((await env.request('GET', `/templates/${t.id}`, { key: sk() })).status).toBe(200)
      expect((await env.request('DELETE', `/templates/${other.id}`, { key: sk() })).status).toBe(204)
      steps = []
      expect((await env.request('DELETE', `/templates/${t.id}`, { key: sk() })).status).toBe(204)
    })
  })

  describe('security', () => {
    test('every endpoint: no key 401 UNAUTHORIZED, public key 401 INVALID_API_KEY, bogus key 401', async () => {
      const t = await create()
      const routes: Array<[string, string, unknown?]> = [
        ['POST', '/templates', valid()], ['GET', '/templates'], ['GET', `/templates/${t.id}`],
        ['PATCH', `/templates/${t.id}`, { name: 'x' }], ['DELETE', `/templates/${t.id}`],
        ['POST', `/templates/${t.id}/duplicate`], ['GET', `/templates/${t.id}/usage`],
      ]
      for (const [method, path, body] of routes) {
        const none = await env.request(method, path, { body })
        expect({ method, path, status: none.status, code: none.body.error.code }).toEqual({ method, path, status: 401, code: 'UNAUTHORIZED' })
        const pub = await env.request(method, path, { key: p.publicKey, body })
        expect({ method, path, status: pub.status, code: pub.body.error.code }).toEqual({ method, path, status: 401, code: 'INVALID_API_KEY' })
        const bogus = await env.request(method, path, { key: `sk_${'0'.repeat(64)}`, body })
        expect(bogus.status).toBe(401)
      }
      expect((await env.request('GET', `/templates/${t.id}`, { key: sk() })).body.name).toBe('Welcome')
    })

    test('a template body is stored verbatim and rendered only with escaping (no server-side evaluation at save)', async () => {
      const src = '<p>{{constructor.constructor}}{{#with "x"}}{{this.constructor}}{{/with}}<script>x</script></p>'
      const t = await create({ body: src })
      expect(t.body).toBe(src)
    })
  })

  describe('getTemplate (for /v1/send)', () => {
    test('returns the project\'s template; another project\'s context gets 404', async () => {
      const t = await create()
      const mine = await getTemplate(ctxFor(env.deps, p.id, { kind: 'cli' }), t.id)
      expect(mine).toEqual(t as unknown as typeof mine)
      const err = await getTemplate(ctxFor(env.deps, q.id, { kind: 'cli' }), t.id).then(() => null, (e: unknown) => e)
      expect(err).toBeInstanceOf(AppError)
      expect((err as AppError).status).toBe(404)
    })
  })
})
