import { beforeAll, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import type { NewProject } from '../../../src/modules/projects/service'
import { renderEmail } from '../../../src/mail/render'
import { addDomain, campaignBody } from '../campaigns/fixture'

/** The preheader of templates and campaigns (issue 36, item 4): a field, and a hidden block at the body's top. */

const HIDDEN = /<!--mailctl:preheader--><div style="display:none;[^"]*">([^<]*?)(?:&#847;|<)/
const blocks = (body: string) => body.split('<!--mailctl:preheader-->').length - 1
const template = (over: Record<string, unknown> = {}) => ({ name: 'P', subject: 'S', body: '<html><body class="x"><p>Hi</p></body></html>', from: 'hello@example.com', ...over })

forEachStore('preheaders', (env) => {
  let p: NewProject
  beforeAll(async () => {
    p = await env.project()
    await addDomain(env, p.id, 'example.com', true)
  })
  const req = (method: string, path: string, body?: unknown) => env.request(method, path, { key: p.secretKey, body })

  test('a template\'s preheader is returned and sits hidden right after <body>, merge tags rendered, text escaped', async () => {
    const r = await req('POST', '/templates', template({ preheader: 'Hi {{ firstName | default: "you" }} & <friends>' }))
    expect(r.status).toBe(201)
    expect(r.body.preheader).toBe('Hi {{ firstName | default: "you" }} & <friends>')
    expect(r.body.body).toStartWith('<html><body class="x"><!--mailctl:preheader--><div style="display:none;')
    expect(HIDDEN.exec(r.body.body)?.[1]).toBe('Hi {{ firstName | default: "you" }} &amp; &lt;friends&gt;')
    const html = renderEmail({ subject: 's', body: r.body.body }, { firstName: 'Ann' }).html
    expect(HIDDEN.exec(html)?.[1]).toBe('Hi Ann &amp; &lt;friends&gt;')
    expect(html).toContain('<p>Hi</p>')
  })

  test('PATCH: a new preheader replaces the block, a body alone keeps it, null takes it out; a body without <body> gets it first', async () => {
    const id = (await req('POST', '/templates', template({ preheader: 'One' }))).body.id
    const two = (await req('PATCH', `/templates/${id}`, { preheader: 'Two' })).body
    expect(blocks(two.body)).toBe(1)
    expect(HIDDEN.exec(two.body)?.[1]).toBe('Two')
    const newBody = (await req('PATCH', `/templates/${id}`, { body: '<p>Plain</p>' })).body
    expect(newBody.preheader).toBe('Two')
    expect(newBody.body).toStartWith('<!--mailctl:preheader--><div')
    expect(newBody.body).toEndWith('<p>Plain</p>')
    // Sending back the body as returned (block included) keeps one block.
    const again = (await req('PATCH', `/templates/${id}`, { body: newBody.body, preheader: 'Three' })).body
    expect(blocks(again.body)).toBe(1)
    expect(HIDDEN.exec(again.body)?.[1]).toBe('Three')
    const none = (await req('PATCH', `/templates/${id}`, { preheader: null })).body
    expect(none).toMatchObject({ preheader: null, body: '<p>Plain</p>' })
    const empty = (await req('POST', '/templates', template({ preheader: '' }))).body
    expect(empty.preheader).toBeNull()
    expect(blocks(empty.body)).toBe(0)
  })

  test('a preheader with a line break or over 255 characters is a 422 on preheader', async () => {
    for (const preheader of ['a\nb', 'x'.repeat(256), 42]) {
      const r = await req('POST', '/templates', template({ preheader }))
      expect(r.status).toBe(422)
      expect(r.body.error.errors[0].field).toBe('preheader')
    }
  })

  test('campaigns: create and PUT take a preheader; a PUT without one takes the block out', async () => {
    const c = (await req('POST', '/campaigns', campaignBody({ preheader: 'Spring is here' }))).body.data
    expect(c.preheader).toBe('Spring is here')
    expect(HIDDEN.exec(c.body)?.[1]).toBe('Spring is here')
    const put = (await req('PUT', `/campaigns/${c.id}`, campaignBody())).body
    expect(put.preheader).toBeNull()
    expect(blocks(put.body)).toBe(0)
    expect((await req('POST', '/campaigns', campaignBody({ preheader: 'x'.repeat(300) }))).status).toBe(422)
  })
})
