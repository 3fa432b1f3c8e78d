import { beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import type { NewProject } from '../../../src/modules/projects/service'
import { addDomain, campaignBody } from '../campaigns/fixture'

/**
 * Preview as a real contact (issue 36, item 3): POST /templates/preview renders content as one contact of
 * the project gets it and lists the variables that render empty for it (built-ins never); POST
 * /campaigns/:id/test renders a test with a chosen contact's data. Happy, error and security cases.
 */
forEachStore('preview as a contact', (env) => {
  let p: NewProject
  let other: NewProject
  let ann = ''
  let bob = ''
  let stranger = ''
  beforeAll(async () => {
    p = await env.project()
    other = await env.project()
    await addDomain(env, p.id, 'example.com', true)
    const add = async (key: string, email: string, data: Record<string, unknown>) => {
      const r = await env.request('POST', '/contacts', { key, body: { email, subscribed: true, data } })
      expect(r.status).toBeLessThan(300)
      return r.body.id as string
    }
    ann = await add(p.secretKey, 'ann@dest.test', { firstName: 'Ann', plan: 'Pro', address: { city: 'Oslo' } })
    bob = await add(p.secretKey, 'bob@dest.test', {})
    stranger = await add(other.secretKey, 'eve@dest.test', { firstName: 'Eve' })
  })
  const req = (method: string, path: string, body?: unknown, key: string | null = p.secretKey) => env.request(method, path, { key, body })
  const content = {
    subject: 'Hi {{ firstName | default: "there" }}',
    body: '<p>{{firstName}} on {{plan}} in {{address.city}}, {{ nickname | default: "friend" }}. <a href="{{unsubscribeUrl}}">Unsubscribe</a> <a href="{{manageUrl}}">Manage</a> {{email}}</p>',
  }

  describe('POST /templates/preview', () => {
    test('renders with the contact\'s data, email and own subscription links; nothing missing', async () => {
      const r = await req('POST', '/templates/preview', { ...content, contactId: ann, preheader: 'For {{firstName}}' })
      expect(r.status).toBe(200)
      expect(r.body.subject).toBe('Hi Ann')
      expect(r.body.html).toContain('Ann on Pro in Oslo, friend.')
      expect(r.body.html).toContain('ann@dest.test')
      expect(r.body.html).toMatch(/href="http:\/\/localhost:3000\/unsubscribe\/[^"]+"/)
      expect(r.body.html).toMatch(/href="http:\/\/localhost:3000\/manage\/[^"]+"/)
      expect(r.body.html).toContain('For Ann')
      expect(r.body.text).toContain('Ann on Pro in Oslo')
      expect(r.body.contact).toEqual({ id: ann, email: 'ann@dest.test' })
      expect(r.body.missing).toEqual([])
    })

    test('a contact without data: the variables without a fallback are missing, fallbacks and built-ins are not', async () => {
      const r = await req('POST', '/templates/preview', { ...content, contactId: bob })
      expect(r.status).toBe(200)
      expect(r.body.subject).toBe('Hi there')
      expect(r.body.html).toContain(' on  in , friend.')
      expect(r.body.missing).toEqual(['address.city', 'firstName', 'plan'])
      // Without a contact: as an address that is not one; the built-ins are still not reported.
      const none = await req('POST', '/templates/preview', content)
      expect(none.status).toBe(200)
      expect(none.body.contact).toBeNull()
      expect(none.body.missing).toEqual(['address.city', 'firstName', 'plan'])
      expect(none.body.missing).not.toContain('unsubscribeUrl')
    })

    test('bad input: 422 naming the field; a template that does not compile: 422 invalid_template', async () => {
      for (const [body, field] of [[{ subject: 'x' }, 'body'], [{ subject: 'a\nb', body: '<p>x</p>' }, 'subject'], [{ ...content, contactId: 42 }, 'contactId'], [{ ...content, preheader: 'a\nb' }, 'preheader']] as const) {
        const r = await req('POST', '/templates/preview', body)
        expect({ status: r.status, code: r.body.error.code, field: r.body.error.errors?.[0]?.field }).toEqual({ status: 422, code: 'VALIDATION_ERROR', field })
      }
      const bad = await req('POST', '/templates/preview', { subject: 'x', body: '<p>{{#if}}</p>' })
      expect(bad.status).toBe(422)
      expect(bad.body.error.errors[0]).toMatchObject({ field: 'body', code: 'invalid_template' })
    })

    test('security: no key 401, public key 401 INVALID_API_KEY, another project\'s contact or an unknown id 404', async () => {
      expect((await req('POST', '/templates/preview', content, null)).body.error.code).toBe('UNAUTHORIZED')
      const pub = await req('POST', '/templates/preview', content, p.publicKey)
      expect({ status: pub.status, code: pub.body.error.code }).toEqual({ status: 401, code: 'INVALID_API_KEY' })
      for (const id of [stranger, 'nope']) {
        const r = await req('POST', '/templates/preview', { ...content, contactId: id })
        expect({ status: r.status, code: r.body.error.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
        expect(JSON.stringify(r.body)).not.toContain('Eve')
      }
    })
  })

  describe('POST /templates/:id/test', () => {
    const tpl = async () => (await req('POST', '/templates', { name: 'T', subject: 'Hello {{ firstName | default: "there" }}', body: '<p>Hi {{firstName}} on {{plan}} <a href="{{unsubscribeUrl}}">u</a></p>', from: 'hello@example.com' })).body.id as string

    test('queues one test email as the chosen contact; the address\'s own links; as its own contact without contactId', async () => {
      const id = await tpl()
      const { emails, emailContents } = env.store.t
      const row = async (emailId: string) => (await env.store.db.select().from(emails).innerJoin(emailContents, eq(emailContents.emailId, emails.id)).where(eq(emails.id, emailId)))[0]
      const r = await req('POST', `/templates/${id}/test`, { email: ' Team@Dest.test ', contactId: ann })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ success: true, data: { email: 'team@dest.test' } })
      const e = await row(r.body.data.id)
      expect(e.emails).toMatchObject({ toAddress: 'team@dest.test', subject: 'Hello Ann', sourceType: 'test', sourceId: id, templateId: id, contactId: null, listUnsubscribe: false, fromAddress: 'hello@example.com' })
      expect(e.email_contents.html).toContain('Hi Ann on Pro')
      expect(e.email_contents.html).not.toContain('/unsubscribe/')
      // Bob tests it to himself as Ann: Ann's data, Bob's own unsubscribe link.
      const own = await req('POST', `/templates/${id}/test`, { email: 'bob@dest.test', contactId: ann })
      const o = await row(own.body.data.id)
      expect(o.emails).toMatchObject({ contactId: bob, subject: 'Hello Ann', listUnsubscribe: true })
      expect(o.email_contents.html).toMatch(/href="http:\/\/localhost:3000\/unsubscribe\/[^"]+"/)
      const plain = await req('POST', `/templates/${id}/test`, { email: 'bob@dest.test' })
      expect((await row(plain.body.data.id)).emails.subject).toBe('Hello there')
    })

    test('errors: bad address 422, suppressed 422, unknown template 404; security: no key, public key, another project\'s template or contact', async () => {
      const id = await tpl()
      expect((await req('POST', `/templates/${id}/test`, { email: 'nope' })).body.error.errors[0].field).toBe('email')
      expect((await req('POST', `/templates/${id}/test`, {})).status).toBe(422)
      expect((await req('POST', '/suppressions', { email: 'blocked@dest.test' })).status).toBeLessThan(300)
      const sup = await req('POST', `/templates/${id}/test`, { email: 'blocked@dest.test' })
      expect({ status: sup.status, code: sup.body.error.errors[0].code }).toEqual({ status: 422, code: 'suppressed' })
      expect((await req('POST', '/templates/nope/test', { email: 'team@dest.test' })).status).toBe(404)
      expect((await req('POST', `/templates/${id}/test`, { email: 'team@dest.test' }, null)).body.error.code).toBe('UNAUTHORIZED')
      expect((await req('POST', `/templates/${id}/test`, { email: 'team@dest.test' }, p.publicKey)).body.error.code).toBe('INVALID_API_KEY')
      expect((await req('POST', `/templates/${id}/test`, { email: 'team@dest.test' }, other.secretKey)).status).toBe(404)
      const theirs = await req('POST', `/templates/${id}/test`, { email: 'team@dest.test', contactId: stranger })
      expect({ status: theirs.status, code: theirs.body.error.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
      const { emails } = env.store.t
      expect((await env.store.db.select().from(emails).where(eq(emails.sourceId, id))).length).toBe(0)
    })
  })

  describe('POST /campaigns/:id/test with contactId', () => {
    test('a test to another address is rendered with the chosen contact\'s data; its links are not the contact\'s', async () => {
      const c = (await req('POST', '/campaigns', campaignBody({ subject: 'Hello {{firstName}}', body: '<p>Hi {{firstName}} on {{plan}} <a href="{{unsubscribeUrl}}">u</a></p>' }))).body.data
      const r = await req('POST', `/campaigns/${c.id}/test`, { email: 'team@dest.test', contactId: ann })
      expect(r.status).toBe(200)
      const { emails, emailContents } = env.store.t
      const [e] = await env.store.db.select().from(emails).innerJoin(emailContents, eq(emailContents.emailId, emails.id)).where(eq(emails.id, r.body.data.id))
      expect(e.emails).toMatchObject({ toAddress: 'team@dest.test', subject: 'Hello Ann', sourceType: 'test', contactId: null })
      expect(e.email_contents.html).toContain('Hi Ann on Pro')
      // team@ is not a contact: no subscription link is made, so nobody unsubscribes Ann by trying the test.
      expect(e.email_contents.html).not.toContain('/unsubscribe/')
    })

    test('another project\'s contact or an unknown id: 404 and nothing queued; a bad contactId: 422', async () => {
      const c = (await req('POST', '/campaigns', campaignBody())).body.data
      const { emails } = env.store.t
      const before = (await env.store.db.select().from(emails).where(eq(emails.sourceId, c.id))).length
      for (const id of [stranger, 'nope']) {
        const r = await req('POST', `/campaigns/${c.id}/test`, { email: 'team@dest.test', contactId: id })
        expect({ status: r.status, code: r.body.error.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
      }
      expect((await env.store.db.select().from(emails).where(eq(emails.sourceId, c.id))).length).toBe(before)
      const bad = await req('POST', `/campaigns/${c.id}/test`, { email: 'team@dest.test', contactId: '' })
      expect({ status: bad.status, field: bad.body.error.errors[0].field }).toEqual({ status: 422, field: 'contactId' })
      // Another project's key cannot test this campaign, whatever the contact.
      const theirs = await req('POST', `/campaigns/${c.id}/test`, { email: 'team@dest.test', contactId: stranger }, other.secretKey)
      expect(theirs.status).toBe(404)
      expect((await req('POST', `/campaigns/${c.id}/test`, { email: 'team@dest.test', contactId: ann }, p.publicKey)).status).toBe(401)
    })
  })
})
