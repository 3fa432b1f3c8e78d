import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { buildReport, reportFilename, sendTlsReports, tlsrptRua, type TlsReport } from '../../src/mail/tlsrpt/report'
import { certResult } from '../../src/mail/tlsrpt/results'
import { systemSender } from '../../src/modules/emails/system'
import { forEachStore } from '../helpers/env'
import { startSink } from '../helpers/smtp'
import { dkimOf, mxTo, pipelineFor, projectWithDomain, startTestDns } from '../modules/emails/fixture'

/**
 * TLS reporting (RFC 8460): delivery sessions counted per day and recipient domain, and the daily reports
 * sent to the `rua` of `_smtp._tls.<domain>`: mailto: through the outbound pipeline (to an SMTP sink on
 * loopback), https: POSTed to an HTTPS sink on loopback with a test CA.
 */

describe('TLS reporting, pure parts', () => {
  test('the _smtp._tls record: exactly one v=TLSRPTv1 with mailto: and https: destinations', () => {
    expect(tlsrptRua(['v=TLSRPTv1; rua=mailto:tls@example.com,https://r.example.com/v1'])).toEqual(['mailto:tls@example.com', 'https://r.example.com/v1'])
    expect(tlsrptRua(['v=spf1 -all', 'v=TLSRPTv1;rua=mailto:a@b.example'])).toEqual(['mailto:a@b.example'])
    expect(tlsrptRua(['v=TLSRPTv1; rua=mailto:a@b.example', 'v=TLSRPTv1; rua=mailto:c@d.example'])).toEqual([])
    expect(tlsrptRua(['v=TLSRPTv1; rua=http://plain.example/,ftp://x'])).toEqual([])
    expect(tlsrptRua([])).toEqual([])
  })
  test('certificate errors map to RFC 8460 result types', () => {
    expect(certResult('CERT_HAS_EXPIRED')).toBe('certificate-expired')
    expect(certResult('ERR_TLS_CERT_ALTNAME_INVALID')).toBe('certificate-host-mismatch')
    expect(certResult('DEPTH_ZERO_SELF_SIGNED_CERT')).toBe('certificate-not-trusted')
    expect(certResult('UNABLE_TO_VERIFY_LEAF_SIGNATURE')).toBe('certificate-not-trusted')
    expect(certResult('ECONNRESET')).toBe('validation-failure')
  })
  test('a report groups sessions by policy with the failures by result and MX host', () => {
    const policy = 'version: STSv1\nmode: testing\nmx: mx.example.com\nmax_age: 86400'
    const r = buildReport('2026-11-26', 'example.com', [
      { day: '2026-11-26', domain: 'example.com', policyType: 'sts', policy, mxHost: 'mx.example.com', result: 'success', sessions: 7 },
      { day: '2026-11-26', domain: 'example.com', policyType: 'sts', policy, mxHost: 'mx.example.com', result: 'certificate-expired', sessions: 2 },
      { day: '2026-11-26', domain: 'example.com', policyType: 'no-policy-found', policy: '', mxHost: 'mx2.example.com', result: 'starttls-not-supported', sessions: 1 },
    ], { organization: 'mx.sender.test', contact: 'postmaster@sender.test', hostname: 'mx.sender.test' })
    expect(r['date-range']).toEqual({ 'start-datetime': '2026-11-26T00:00:00Z', 'end-datetime': '2026-11-26T23:59:59Z' })
    expect(r.policies).toEqual([
      {
        policy: { 'policy-type': 'sts', 'policy-string': policy.split('\n'), 'policy-domain': 'example.com', 'mx-host': ['mx.example.com'] },
        summary: { 'total-successful-session-count': 7, 'total-failure-session-count': 2 },
        'failure-details': [{ 'result-type': 'certificate-expired', 'receiving-mx-hostname': 'mx.example.com', 'failed-session-count': 2 }],
      },
      {
        policy: { 'policy-type': 'no-policy-found', 'policy-domain': 'example.com' },
        summary: { 'total-successful-session-count': 0, 'total-failure-session-count': 1 },
        'failure-details': [{ 'result-type': 'starttls-not-supported', 'receiving-mx-hostname': 'mx2.example.com', 'failed-session-count': 1 }],
      },
    ])
    expect(reportFilename('mx.sender.test', 'example.com', '2026-11-26')).toBe('mx.sender.test!example.com!1795651200!1795737599!20261126.json.gz')
  })
})

const rnd = () => Math.random().toString(36).slice(2, 8)

/** What this test reads of mailparser's result (the package has no type declarations). */
interface ParsedMail {
  subject?: string
  headers: Map<string, unknown>
  attachments: Array<{ filename?: string; contentType: string; content: Buffer }>
}
const { simpleParser } = require('mailparser') as { simpleParser: (raw: Buffer) => Promise<ParsedMail> }

describe('TLS reporting in delivery', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-tlsrpt-'))
  const tag = rnd()
  const secured = `tlsrpt-tls-${tag}.test`
  const clear = `tlsrpt-clear-${tag}.test`
  const silent = `tlsrpt-none-${tag}.test`
  const refusing = `tlsrpt-refused-${tag}.test`
  const reports = `tlsrpt-reports-${tag}.test`
  const collector = `rpt-${tag}.test`
  const sh = (args: string[]) => {
    const r = Bun.spawnSync(args, { cwd: dir, stderr: 'pipe' })
    if (r.exitCode !== 0) throw new Error(`${args[0]} failed: ${r.stderr.toString()}`)
  }
  sh(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=mailctl test CA'])
  sh(['openssl', 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', `/CN=${collector}`])
  writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=DNS:${collector},DNS:mx.${secured}\n`)
  sh(['openssl', 'x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '2', '-extfile', 'ext.cnf'])
  const key = readFileSync(join(dir, 'leaf.key'), 'utf8')
  const cert = readFileSync(join(dir, 'leaf.pem'), 'utf8')
  const ca = readFileSync(join(dir, 'ca.pem'), 'utf8')

  // The HTTPS collector: keeps every POST; answers 500 for the `refusing` domain's reports.
  const posts: Array<{ path: string; type: string; report: TlsReport }> = []
  const https = Bun.serve({
    hostname: '127.0.0.11', port: 0, tls: { key, cert },
    async fetch(req) {
      const report = JSON.parse(gunzipSync(Buffer.from(await req.arrayBuffer())).toString('utf8')) as TlsReport
      const path = new URL(req.url).pathname
      posts.push({ path, type: req.headers.get('content-type') ?? '', report })
      return new Response(path === '/fail' ? 'no' : 'ok', { status: path === '/fail' ? 500 : 200 })
    },
  })
  let dns: Awaited<ReturnType<typeof startTestDns>>
  const sinks: Array<Awaited<ReturnType<typeof startSink>>> = []
  beforeAll(async () => {
    dns = await startTestDns()
    const tls = await startSink({ host: '127.0.0.9', tlsCert: { key, cert } })
    const plain = await startSink({ host: '127.0.0.10', port: tls.port, noTls: true })
    sinks.push(tls, plain)
    mxTo(dns, secured, '127.0.0.9')
    mxTo(dns, clear, '127.0.0.10')
    mxTo(dns, silent, '127.0.0.9')
    mxTo(dns, refusing, '127.0.0.9')
    mxTo(dns, reports, '127.0.0.9')
    dns.set(collector, [{ type: 'A', address: '127.0.0.11' }])
    const url = `https://${collector}:${https.port}`
    dns.set(`_smtp._tls.${secured}`, [{ type: 'TXT', data: `v=TLSRPTv1; rua=mailto:tls-reports@${reports},${url}/secured` }])
    dns.set(`_smtp._tls.${clear}`, [{ type: 'TXT', data: `v=TLSRPTv1; rua=${url}/clear` }])
    dns.set(`_smtp._tls.${refusing}`, [{ type: 'TXT', data: `v=TLSRPTv1; rua=${url}/fail` }])
  }, 30_000)
  afterAll(async () => {
    https.stop(true)
    for (const s of sinks) await s.close()
    await dns.close()
    rmSync(dir, { recursive: true, force: true })
  })

  forEachStore('TLS reports', (env) => {
    test('sessions are counted per domain and result; a finished day is reported by mail and by HTTPS, once', async () => {
      env.config.dnsServers = [dns.server]
      env.config.mxPort = sinks[0].port
      env.config.webhookAllowHosts = ['127.0.0.0/8']
      const p = await projectWithDomain(env, dns, `tlsrpt-from-${rnd()}.test`)
      env.config.systemFrom = p.from
      posts.length = 0
      const send = async (to: string) => {
        const r = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to, from: p.from, subject: 'tls', body: '<p>hi</p>' } })
        expect(r.status).toBe(200)
      }
      for (const to of [`a@${secured}`, `b@${secured}`, `c@${clear}`, `d@${silent}`, `e@${refusing}`]) await send(to)
      const pl = pipelineFor(env)
      await pl.drain()
      await pl.stop()
      const { tlsReportCounts: t } = env.store.t
      const rows = (await env.store.db.select().from(t)).map((r) => ({ domain: r.domain, policyType: r.policyType, mxHost: r.mxHost, result: r.result, sessions: r.sessions }))
      const today = new Date().toISOString().slice(0, 10)
      // Two messages: one session, or two when they went in parallel.
      const securedRows = rows.filter((r) => r.domain === secured)
      expect(securedRows.map((r) => ({ ...r, sessions: Math.min(r.sessions, 1) }))).toEqual([{ domain: secured, policyType: 'no-policy-found', mxHost: `mx.${secured}`, result: 'success', sessions: 1 }])
      const securedSessions = securedRows[0].sessions
      expect(rows.filter((r) => r.domain === clear)).toEqual([{ domain: clear, policyType: 'no-policy-found', mxHost: `mx.${clear}`, result: 'starttls-not-supported', sessions: 1 }])
      expect(rows.map((r) => r.domain).sort()).toEqual([secured, clear, silent, refusing].sort())

      // Today is not finished: nothing is sent.
      expect(await sendTlsReports(env.deps, systemSender, new Date(), [ca])).toEqual({ sent: 0, failed: 0, noRecord: 0, gaveUp: 0 })
      const tomorrow = new Date(Date.now() + 86_400_000)
      expect(await sendTlsReports(env.deps, systemSender, tomorrow, [ca])).toEqual({ sent: 2, failed: 1, noRecord: 1, gaveUp: 0 })
      const byPath = (path: string) => posts.filter((x) => x.path === path && x.report.policies[0].policy['policy-domain'] === (path === '/secured' ? secured : path === '/clear' ? clear : refusing))
      const [clearPost] = byPath('/clear')
      expect(clearPost.type).toBe('application/tlsrpt+gzip')
      expect(clearPost.report['date-range']).toEqual({ 'start-datetime': `${today}T00:00:00Z`, 'end-datetime': `${today}T23:59:59Z` })
      expect(clearPost.report['contact-info']).toBe(p.from)
      expect(clearPost.report.policies).toEqual([{
        policy: { 'policy-type': 'no-policy-found', 'policy-domain': clear },
        summary: { 'total-successful-session-count': 0, 'total-failure-session-count': 1 },
        'failure-details': [{ 'result-type': 'starttls-not-supported', 'receiving-mx-hostname': `mx.${clear}`, 'failed-session-count': 1 }],
      }])
      expect(byPath('/secured')[0].report.policies[0].summary).toEqual({ 'total-successful-session-count': securedSessions, 'total-failure-session-count': 0 })
      // Sent reports' counts are gone, the refused one's stay for the next run; no record: deleted, no report.
      expect((await env.store.db.select().from(t)).map((r) => r.domain)).toEqual([refusing])

      // The mailto: report went into the outbound queue as system mail: deliver it and read it as a receiver would.
      const pl2 = pipelineFor(env)
      await pl2.drain()
      await pl2.stop()
      const [mail] = sinks[0].received.filter((m) => m.to.includes(`tls-reports@${reports}`) && m.raw.includes(p.from))
      expect(mail).toBeDefined()
      const parsed = await simpleParser(mail.raw)
      expect(parsed.headers.get('content-type')).toMatchObject({ value: 'multipart/report', params: { 'report-type': 'tlsrpt' } })
      expect(parsed.subject).toBe(`Report Domain: ${secured} Submitter: mx.mailctl.test Report-ID: <${today}.${secured}@mx.mailctl.test>`)
      expect(parsed.headers.get('tls-report-domain')).toBe(secured)
      expect(parsed.headers.get('tls-report-submitter')).toBe('mx.mailctl.test')
      expect(parsed.attachments).toHaveLength(1)
      const att = parsed.attachments[0]
      expect(att.contentType).toBe('application/tlsrpt+gzip')
      expect(att.filename).toBe(reportFilename('mx.mailctl.test', secured, today))
      const mailed = JSON.parse(gunzipSync(att.content).toString('utf8')) as TlsReport
      expect(mailed).toEqual(byPath('/secured')[0].report)
      expect((await dkimOf(mail.raw, dns)).map((r) => r.status.result)).toContain('pass')

      // The refused report: tried again at the next run, given up a day after its first failure. (The
      // report's own delivery was a session too, to a domain without a record: no report.)
      expect(await sendTlsReports(env.deps, systemSender, new Date(tomorrow.getTime() + 3600_000), [ca])).toEqual({ sent: 0, failed: 1, noRecord: 1, gaveUp: 0 })
      expect(await sendTlsReports(env.deps, systemSender, new Date(tomorrow.getTime() + 25 * 3600_000), [ca])).toEqual({ sent: 0, failed: 0, noRecord: 0, gaveUp: 1 })
      expect(await env.store.db.select().from(t)).toEqual([])
      expect(byPath('/fail')).toHaveLength(3)
    }, 60_000)

    test('counts from several flushes (and nodes) add up', async () => {
      const { TlsResults } = await import('../../src/mail/tlsrpt/results')
      const a = new TlsResults(env.store)
      const b = new TlsResults(env.store)
      const d = `sum-${rnd()}.test`
      for (let i = 0; i < 3; i++) a.add(d, null, 'mx.sum.test', 'success')
      b.add(d, null, 'mx.sum.test', 'success')
      b.add(d, null, 'mx.sum.test', 'starttls-not-supported')
      await a.close()
      await b.close()
      a.add(d, null, 'mx.sum.test', 'success')
      await a.close()
      const { tlsReportCounts: t } = env.store.t
      const rows = (await env.store.db.select().from(t)).filter((r) => r.domain === d).map((r) => [r.result, r.sessions]).sort()
      expect(rows).toEqual([['starttls-not-supported', 1], ['success', 5]])
    })
  }, { outbound: 'direct' })
})
