/**
 * What mailctl's own markup adds to SpamAssassin's score. Realistic short campaigns (text only, and
 * with a banner), a longer newsletter and transactional receipts (without and with a logo) are sent through the real pipeline (campaign
 * send or POST /v1/send, DKIM-signed, tracking on) to a loopback SMTP sink; the same content is also
 * composed alone (nodemailer's MailComposer: subject, HTML, text, From, To, nothing else). Both are
 * scored by `spamassassin -t -L` (local rules only, no network), and the script prints each score, the
 * difference and the rules only mailctl's version hits. Run: `bun bench/spam-score.ts` (needs Debian's
 * spamassassin; BENCH_DUMP=<directory> also writes each message mailctl sent there). It asserts nothing:
 * the figures go to docs/benchmarks.md.
 */
import { join } from 'node:path'
import { TestEnv } from '../test/helpers/env'
import { startSink } from '../test/helpers/smtp'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../test/modules/emails/fixture'
import { Worker } from '../src/jobs/queue'
import { campaignSendJob } from '../src/modules/campaigns/jobs'

const MailComposer = require('nodemailer/lib/mail-composer') as new (mail: Record<string, unknown>) => { compile(): { build(): Promise<Buffer> } }

if (!Bun.which('spamassassin')) {
  console.error('spamassassin is not installed (Debian: apt-get install spamassassin)')
  process.exit(2)
}

interface Score { score: number; tests: string[] }

async function score(raw: Buffer): Promise<Score> {
  const proc = Bun.spawn(['spamassassin', '-t', '-L'], { stdin: raw, stdout: 'pipe', stderr: 'ignore' })
  const out = await new Response(proc.stdout).text()
  await proc.exited
  const head = out.split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, ' ')
  // The folded header's list of tests goes on after a comma and blanks.
  const m = /^X-Spam-Status: \w+, score=(-?[\d.]+) .*?tests=([^\s,]*(?:,\s*[^\s,]+)*)/m.exec(head)
  if (!m) throw new Error(`no X-Spam-Status in spamassassin's output:\n${out.slice(0, 2000)}`)
  return { score: Number(m[1]), tests: m[2].split(/,\s*/).filter((t) => t && t !== 'none') }
}

const SHORT_CAMPAIGN = `<p>Hi {{firstName}},</p>
<p>Our spring sale starts today: 20% off every plan until Sunday. <a href="https://shop.example.org/spring">See the offers</a>.</p>
<p>The Acme team</p>`

const SHORT_CAMPAIGN_BANNER = `<p><img src="https://cdn.example.org/spring/banner.jpg" alt="Spring sale: 20% off every plan" width="560" height="200"></p>
<p>Hi {{firstName}},</p>
<p>Our spring sale starts today: 20% off every plan until Sunday. <a href="https://shop.example.org/spring">See the offers</a>.</p>
<p>The Acme team</p>`

const NEWSLETTER = `<h1>Acme monthly: what changed in May</h1>
<p>Hi {{firstName}}, here is what we shipped this month and what is coming next.</p>
<h2>Faster exports</h2>
<p>Exports of large workspaces now finish in a few seconds instead of minutes. We rewrote the export job so that it
streams rows straight to the file instead of building the whole document in memory first.</p>
<p><img src="https://cdn.example.org/newsletter/may/exports.png" alt="The new export dialog" width="560" height="280"></p>
<h2>Shared dashboards</h2>
<p>Dashboards can now be shared with people outside your workspace through a read-only link. You decide how long the
link stays valid, and you can revoke it at any time from the dashboard's settings.</p>
<ol><li>Open a dashboard</li><li>Choose Share</li><li>Copy the link</li></ol>
<h2>Coming in June</h2>
<p>Scheduled reports by email, and a new API for bulk updates. Reply to this email if you want early access.</p>
<p><a href="https://example.org/blog/may-update">Read the full changelog</a> · <a href="https://example.org/docs">Documentation</a></p>
<p>Thanks for using Acme,<br>Dana from Acme</p>`

const RECEIPT = `<p>Hi Sam,</p>
<p>Thanks for your order <strong>#10442</strong>. We received your payment of <strong>€48.00</strong> on 12 June.</p>
<table><tr><td>Acme Pro, monthly</td><td>€40.00</td></tr><tr><td>VAT</td><td>€8.00</td></tr><tr><td><strong>Total</strong></td><td><strong>€48.00</strong></td></tr></table>
<p>Your invoice is available in your account: <a href="https://app.example.org/billing/invoices/10442">view invoice</a>.</p>
<p>If you have any questions, reply to this email.</p>
<p>Acme Billing</p>`

const RECEIPT_LOGO = `<p><img src="https://cdn.example.org/acme-logo.png" alt="Acme" width="120" height="40"></p>
${RECEIPT}`

const env = new TestEnv('sqlite')
await env.start()
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
const rnd = () => Math.random().toString(36).slice(2, 8)
try {
  env.config.dnsServers = [dns.server]
  env.config.mxPort = sink.port
  env.config.outbound = 'direct'
  // An install's public URL (the test default, http://localhost:3000, hits WEIRD_PORT in every tracked link).
  env.config.publicUrl = 'https://mail.acme.example'
  const p = await projectWithDomain(env, dns, `acme-${rnd()}.test`)
  const rows: Array<{ name: string; alone: Score; mailctl: Score }> = []

  async function alone(subject: string, html: string): Promise<Buffer> {
    const text = html.replace(/<[^>]+>/g, '').replace(/\n{3,}/g, '\n\n').trim()
    return new MailComposer({ from: `Acme <${p.from}>`, to: 'reader@dest.test', subject, html, text }).compile().build()
  }

  // The preheader is mailctl's markup too (a hidden block and its fillers): the content alone has none.
  const campaigns: Array<[string, string, string, string?]> = [
    ['short campaign', 'Spring sale: 20% off', SHORT_CAMPAIGN], ['short campaign with a banner', 'Spring sale: 20% off', SHORT_CAMPAIGN_BANNER],
    ['newsletter campaign', 'Acme monthly: what changed in May', NEWSLETTER],
    ['short campaign with a banner and a preheader', 'Spring sale: 20% off', SHORT_CAMPAIGN_BANNER, 'Every plan, until Sunday'],
  ]
  for (const [name, subject, body, preheader] of campaigns) {
    const to = `reader-${rnd()}@dest.test`
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: to, subscribed: true, data: { firstName: 'Sam' } } })
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: { name, subject, body, ...(preheader ? { preheader } : {}), from: p.from, audienceType: 'FILTERED', audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'equals', value: to }] }] } } })
    if (c.status !== 200) throw new Error(`campaign: ${c.status} ${c.text}`)
    await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: p.secretKey, body: {} })
    await new Worker(env.deps, [campaignSendJob({ batchSize: 10 })]).drain()
    await pipelineFor(env).drain()
    const msg = sink.received.find((m) => m.to.includes(to))
    if (!msg) throw new Error(`${name}: nothing arrived`)
    if (process.env.BENCH_DUMP) await Bun.write(join(process.env.BENCH_DUMP, `${name.replace(/ /g, '-')}.eml`), msg.raw)
    rows.push({ name, alone: await score(await alone(subject, body.replaceAll('{{firstName}}', 'Sam'))), mailctl: await score(msg.raw) })
  }
  for (const [name, body] of [['transactional receipt', RECEIPT], ['transactional receipt with a logo', RECEIPT_LOGO]] as const) {
    const to = `buyer-${rnd()}@dest.test`
    const subject = 'Your Acme receipt #10442'
    const r = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to, from: p.from, subject, body } })
    if (r.status !== 200) throw new Error(`send: ${r.status} ${r.text}`)
    await pipelineFor(env).drain()
    const msg = sink.received.find((m) => m.to.includes(to))
    if (!msg) throw new Error(`${name}: nothing arrived`)
    if (process.env.BENCH_DUMP) await Bun.write(join(process.env.BENCH_DUMP, `${name.replace(/ /g, '-')}.eml`), msg.raw)
    rows.push({ name, alone: await score(await alone(subject, body)), mailctl: await score(msg.raw) })
  }
  for (const r of rows) {
    const added = r.mailctl.tests.filter((t) => !r.alone.tests.includes(t))
    const gone = r.alone.tests.filter((t) => !r.mailctl.tests.includes(t))
    console.log(JSON.stringify({
      message: r.name, contentAlone: r.alone.score, throughMailctl: r.mailctl.score, difference: Number((r.mailctl.score - r.alone.score).toFixed(1)),
      rulesOnlyMailctl: added, rulesOnlyContentAlone: gone,
    }))
  }
} finally {
  await sink.close()
  await dns.close()
  await env.stop()
}
