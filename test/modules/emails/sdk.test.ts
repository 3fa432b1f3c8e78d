import { expect, test } from 'bun:test'
import Plunk from '@plunk/node'
import { forEachStore } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { buildApp } from '../../../src/http/app'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from './fixture'

/** The official @plunk/node SDK, unchanged, against a real mailctl listener. */

const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
const rnd = () => Math.random().toString(36).slice(2, 8)

forEachStore('@plunk/node SDK', (env) => {
  test('emails.send queues and delivers; a public key is refused with the SDK\'s TokenError', async () => {
    const p = await projectWithDomain(env, dns, `sdk-${rnd()}.test`)
    const server = buildApp(env.deps).listen({ port: 0, hostname: '127.0.0.1' })
    env.onStop(async () => { await server.stop(true) })
    const baseUrl = `http://127.0.0.1:${server.server?.port}/v1/`
    const plunk = new Plunk(p.secretKey, { baseUrl })
    const to = `sdk.${rnd()}@dest.test`
    const res = await plunk.emails.send({ to, subject: 'From the SDK', body: '<p>Hello from the SDK</p>', from: p.from, name: 'SDK Sender' })
    expect(res.success).toBe(true)
    const data = (res as unknown as { data: { emails: Array<{ contact: { email: string }; email: string }> } }).data
    expect(data.emails[0].contact.email).toBe(to)
    const many = await plunk.emails.send({ to: [`a.${to}`, `b.${to}`], subject: 'Two', body: '<p>Two</p>', from: p.from, subscribed: true })
    expect(many.success).toBe(true)
    await pipelineFor(env).drain()
    const got = sink.received.find((m) => m.messageId === `<${data.emails[0].email}@${p.domain}>`)
    expect(got).toBeDefined()
    expect(got?.raw.toString()).toContain(`From: SDK Sender <${p.from}>`)
    expect(sink.received.filter((m) => m.to[0]?.endsWith(to)).length).toBe(3)
    // type: "markdown" (the SDK's own field) renders the body as Markdown.
    const md = await plunk.emails.send({ to, subject: 'Markdown', body: '# Hello\n\n**from** the SDK', type: 'markdown', from: p.from })
    const mdId = (md as unknown as { data: { emails: Array<{ email: string }> } }).data.emails[0].email
    await pipelineFor(env).drain()
    const mdRaw = sink.received.find((m) => m.messageId === `<${mdId}@${p.domain}>`)?.raw.toString() ?? ''
    expect(mdRaw).toContain('<h1>Hello</h1>')
    expect(mdRaw).toContain('<strong>from</strong> the SDK')
    // A refused request reaches the SDK's user with the server's reason (the envelope's top-level message).
    const invalid = await plunk.emails.send({ to, subject: 's', body: 'b' }).then(() => null, (e: Error) => e)
    expect(invalid?.message).toBe('from: required unless the template has a sender')
    const pub = new Plunk(p.publicKey, { baseUrl })
    const err = await pub.emails.send({ to, subject: 's', body: 'b', from: p.from }).then(() => null, (e: Error) => e)
    expect(err?.constructor.name).toBe('TokenError')
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
