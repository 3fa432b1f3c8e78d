import { beforeAll, describe, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import type { NewProject } from '../../../src/modules/projects/service'
import { MAX_DESIGN_CHARS } from '../../../src/modules/templates/design'
import { addDomain, campaignBody } from '../campaigns/fixture'

/** The `design` field of templates and campaigns (issue 36): the editor's JSON beside `body`. */

const DESIGN = {
  version: 1, mode: 'visual', settings: { width: 600, background: '#f4f4f5' },
  blocks: [{ id: 'b1', type: 'heading', text: 'Hi {{ name | default: "there" }}', style: { align: 'center' } }, { id: 'b2', type: 'divider' }],
}

const template = (over: Record<string, unknown> = {}) => ({
  name: 'Welcome', subject: 'Welcome', body: '<table><tr><td>Hi</td></tr></table>', from: 'hello@example.com', ...over,
})

forEachStore('designs of templates and campaigns', (env) => {
  let p: NewProject
  let q: NewProject
  const sk = () => p.secretKey

  beforeAll(async () => {
    p = await env.project()
    q = await env.project()
    await addDomain(env, p.id, 'example.com', true)
  })

  describe('templates', () => {
    test('a design is stored beside the body and returned as given by create, get, list and duplicate', async () => {
      const r = await env.request('POST', '/templates', { key: sk(), body: template({ design: DESIGN }) })
      expect(r.status).toBe(201)
      expect(r.body.design).toEqual(DESIGN)
      expect(r.body.body).toBe('<table><tr><td>Hi</td></tr></table>')
      const got = await env.request('GET', `/templates/${r.body.id}`, { key: sk() })
      expect(got.body.design).toEqual(DESIGN)
      const list = await env.request('GET', '/templates?pageSize=100', { key: sk() })
      expect(list.body.data.find((t: { id: string }) => t.id === r.body.id).design).toEqual(DESIGN)
      const dup = await env.request('POST', `/templates/${r.body.id}/duplicate`, { key: sk() })
      expect(dup.body.design).toEqual(DESIGN)
    })

    test('a client that sends only body keeps working: design is null', async () => {
      const r = await env.request('POST', '/templates', { key: sk(), body: template() })
      expect(r.status).toBe(201)
      expect(r.body.design).toBeNull()
      const patched = await env.request('PATCH', `/templates/${r.body.id}`, { key: sk(), body: { name: 'Renamed' } })
      expect(patched.body).toMatchObject({ name: 'Renamed', design: null })
    })

    test('PATCH: a new design replaces it, null clears it, a changed body without a design clears it, other fields keep it', async () => {
      const r = await env.request('POST', '/templates', { key: sk(), body: template({ design: DESIGN }) })
      const id = r.body.id
      const renamed = await env.request('PATCH', `/templates/${id}`, { key: sk(), body: { name: 'Other', body: r.body.body } })
      expect(renamed.body.design).toEqual(DESIGN)
      const next = { ...DESIGN, blocks: [] }
      const redesigned = await env.request('PATCH', `/templates/${id}`, { key: sk(), body: { body: '<p>new</p>', design: next } })
      expect(redesigned.body).toMatchObject({ body: '<p>new</p>', design: next })
      const handEdited = await env.request('PATCH', `/templates/${id}`, { key: sk(), body: { body: '<p>by hand</p>' } })
      expect(handEdited.body).toMatchObject({ body: '<p>by hand</p>', design: null })
      await env.request('PATCH', `/templates/${id}`, { key: sk(), body: { design: DESIGN } })
      const cleared = await env.request('PATCH', `/templates/${id}`, { key: sk(), body: { design: null } })
      expect(cleared.body.design).toBeNull()
    })

    test('a design that is not an object answers 422 on design; one over the size limit 422 too_large; nothing is written', async () => {
      for (const design of ['<p>', 42, [1, 2], true]) {
        const r = await env.request('POST', '/templates', { key: sk(), body: template({ design }) })
        expect(r.status).toBe(422)
        expect(r.body.error.code).toBe('VALIDATION_ERROR')
        expect(r.body.error.errors[0].field).toBe('design')
      }
      const big = { version: 1, blocks: [{ type: 'text', html: 'x'.repeat(MAX_DESIGN_CHARS) }] }
      const r = await env.request('POST', '/templates', { key: sk(), body: template({ name: 'big', design: big }) })
      expect(r.status).toBe(422)
      expect(r.body.error.errors[0]).toMatchObject({ field: 'design', code: 'too_large' })
      const list = await env.request('GET', '/templates?search=big', { key: sk() })
      expect(list.body.total).toBe(0)
    })

    test("another project's template with a design is a 404", async () => {
      const r = await env.request('POST', '/templates', { key: sk(), body: template({ design: DESIGN }) })
      const other = await env.request('GET', `/templates/${r.body.id}`, { key: q.secretKey })
      expect(other.status).toBe(404)
      const patched = await env.request('PATCH', `/templates/${r.body.id}`, { key: q.secretKey, body: { design: null } })
      expect(patched.status).toBe(404)
    })
  })

  describe('campaigns', () => {
    test('a design is stored and returned by create, get, list and duplicate; PUT without one leaves none', async () => {
      const r = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ design: DESIGN }) })
      expect(r.status).toBe(200)
      const c = r.body.data
      expect(c.design).toEqual(DESIGN)
      expect((await env.request('GET', `/campaigns/${c.id}`, { key: sk() })).body.design).toEqual(DESIGN)
      const list = await env.request('GET', '/campaigns?pageSize=100', { key: sk() })
      expect(list.body.data.find((x: { id: string }) => x.id === c.id).design).toEqual(DESIGN)
      const dup = await env.request('POST', `/campaigns/${c.id}/duplicate`, { key: sk() })
      expect((dup.body.data ?? dup.body).design).toEqual(DESIGN)
      const put = await env.request('PUT', `/campaigns/${c.id}`, { key: sk(), body: campaignBody() })
      expect(put.status).toBe(200)
      expect(put.body.design).toBeNull()
      const again = await env.request('PUT', `/campaigns/${c.id}`, { key: sk(), body: campaignBody({ design: DESIGN }) })
      expect(again.body.design).toEqual(DESIGN)
    })

    test('a campaign without a design has design null; a bad design answers 422 on design', async () => {
      const r = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody() })
      expect(r.body.data.design).toBeNull()
      const bad = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ design: 'blocks' }) })
      expect(bad.status).toBe(422)
      expect(bad.body.error.errors[0].field).toBe('design')
      const big = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ design: { html: 'x'.repeat(MAX_DESIGN_CHARS) } }) })
      expect(big.status).toBe(422)
      expect(big.body.error.errors[0]).toMatchObject({ field: 'design', code: 'too_large' })
    })
  })
})
