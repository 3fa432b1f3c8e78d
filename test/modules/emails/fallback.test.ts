import { expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { until } from '../../helpers/worker'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from './fixture'

/**
 * A template brought from Plunk (issue 36): `{{ name | default: "there" }}` renders in /v1/send as Plunk
 * renders it, for a recipient with the value, without it, and with it empty; the message that reaches
 * the recipient's server carries it.
 */
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
const rnd = () => Math.random().toString(36).slice(2, 8)

forEachStore('Plunk-style fallbacks in /v1/send', (env) => {
  test('a template with Liquid fallbacks: the value, else the fallback, in the subject, HTML and text', async () => {
    const p = await projectWithDomain(env, dns, `fb-${rnd()}.test`)
    const tpl = await env.request('POST', '/templates', {
      key: p.secretKey,
      body: { name: 'From Plunk', subject: 'Hi {{ name | default: "there" }}', body: '<p>Hello {{ name | default: "there" }}, {{ discount | default: \'10%\' }} off.</p>', from: p.from },
    })
    expect(tpl.status).toBe(201)
    const send = async (to: string, data?: Record<string, unknown>) => {
      const r = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to, template: tpl.body.id, ...(data ? { data } : {}) } })
      expect(r.status).toBe(200)
      return r.body.data.emails[0].email as string
    }
    const ann = `ann.${rnd()}@dest.test`
    const nobody = `nobody.${rnd()}@dest.test`
    const blank = `blank.${rnd()}@dest.test`
    await send(ann, { name: 'Ann', discount: '30%' })
    await send(nobody)
    await send(blank, { name: '', discount: 0 })
    await pipelineFor(env).drain()
    const got = (to: string) => sink.received.find((m) => m.to.includes(to))
    await until(() => [ann, nobody, blank].every((t) => got(t)), 30_000, 'the three messages in the sink', 50)
    const raw = (to: string) => (got(to)?.raw.toString('utf8') ?? '').replace(/=\r?\n/g, '').replace(/=3D/g, '=')
    expect(raw(ann)).toContain('Subject: Hi Ann')
    expect(raw(ann)).toContain('<p>Hello Ann, 30% off.</p>')
    expect(raw(ann)).toContain('Hello Ann, 30% off.')
    for (const to of [nobody, blank]) {
      expect(raw(to)).toContain('Subject: Hi there')
      expect(raw(to)).toContain('<p>Hello there, 10% off.</p>')
      expect(raw(to)).not.toContain('default:')
      expect(raw(to)).not.toContain(', 30% off')
    }
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
