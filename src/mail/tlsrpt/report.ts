/**
 * Daily TLS reports (RFC 8460). For each finished UTC day and recipient domain with counted sessions
 * (results.ts), `_smtp._tls.<domain>` TXT (`v=TLSRPTv1; rua=...`) names where the report goes:
 * - `mailto:` — an email through the outbound pipeline, DKIM-signed, from MAILCTL_SYSTEM_FROM (as system
 *   mail: an email of the project that verified its domain): `multipart/report; report-type="tlsrpt"`,
 *   a text part and the report as `application/tlsrpt+gzip`, named
 *   `<submitter>!<domain>!<begin>!<end>!<id>.json.gz`, with the RFC's subject and the TLS-Report-Domain and
 *   TLS-Report-Submitter headers;
 * - `https:` — a POST of the gzipped report (`Content-Type: application/tlsrpt+gzip`) through the guarded
 *   fetcher (src/net/safe-fetch.ts: internal addresses only when MAILCTL_WEBHOOK_ALLOW_HOSTS allows them;
 *   MAILCTL_MTA_STS_CA trusted), any 2xx being success.
 * A report counts as sent once one of its destinations took it (a queued email counts: the pipeline
 * retries it); its counts are then deleted. When none took it, the job tries again at its next run (every
 * hour) and gives up a day after the first failure. A domain without a TLSRPT record gets no report and its
 * counts are deleted.
 */
import { gzipSync } from 'node:zlib'
import type { Deps } from '../../deps'
import { resolverFor } from '../../dns'
import { safeFetch, safeFetchOptions } from '../../net/safe-fetch'
import { isEmail, normalizeEmail } from '../address'
import type { SystemSender } from '../system'
import { countsOf, deleteCounts, finishedDays, markFailed, type CountRow } from './repo'
import { TLS_REPORT_SOURCE, utcDay } from './results'

/** The `rua` URIs of a `_smtp._tls` TXT answer: exactly one `v=TLSRPTv1` record, else none (RFC 8460 3). */
export function tlsrptRua(records: string[]): string[] {
  const rpt = records.filter((r) => /^v=TLSRPTv1\s*(;|$)/.test(r.trim()))
  if (rpt.length !== 1) return []
  const m = /(?:^|;)\s*rua=([^;]*)/.exec(rpt[0])
  if (!m) return []
  return m[1].split(',').map((u) => u.trim()).filter((u) => /^(mailto:[^\s]+@[^\s]+|https:\/\/[^\s]+)$/i.test(u))
}

interface ReportPolicy {
  policy: { 'policy-type': string; 'policy-string'?: string[]; 'policy-domain': string; 'mx-host'?: string[] }
  summary: { 'total-successful-session-count': number; 'total-failure-session-count': number }
  'failure-details'?: Array<{ 'result-type': string; 'receiving-mx-hostname'?: string; 'failed-session-count': number }>
}

export interface TlsReport {
  'organization-name': string
  'date-range': { 'start-datetime': string; 'end-datetime': string }
  'contact-info': string
  'report-id': string
  policies: ReportPolicy[]
}

/** The RFC 8460 JSON report of one day's counts for one domain. */
export function buildReport(day: string, domain: string, rows: CountRow[], submitter: { organization: string; contact: string; hostname: string }): TlsReport {
  const groups = new Map<string, CountRow[]>()
  for (const r of rows) {
    const k = `${r.policyType}\u0000${r.policy}`
    groups.set(k, [...(groups.get(k) ?? []), r])
  }
  const policies: ReportPolicy[] = []
  for (const list of groups.values()) {
    const { policyType, policy } = list[0]
    const lines = policy ? policy.split('\n') : []
    const mx = lines.filter((l) => l.startsWith('mx: ')).map((l) => l.slice(4))
    let ok = 0
    let failed = 0
    const details = new Map<string, { 'result-type': string; 'receiving-mx-hostname'?: string; 'failed-session-count': number }>()
    for (const r of list) {
      if (r.result === 'success') { ok += r.sessions; continue }
      failed += r.sessions
      const k = `${r.result}\u0000${r.mxHost}`
      const d = details.get(k)
      if (d) d['failed-session-count'] += r.sessions
      else details.set(k, { 'result-type': r.result, ...(r.mxHost ? { 'receiving-mx-hostname': r.mxHost } : {}), 'failed-session-count': r.sessions })
    }
    policies.push({
      policy: { 'policy-type': policyType, ...(lines.length ? { 'policy-string': lines } : {}), 'policy-domain': domain, ...(mx.length ? { 'mx-host': mx } : {}) },
      summary: { 'total-successful-session-count': ok, 'total-failure-session-count': failed },
      ...(details.size ? { 'failure-details': [...details.values()] } : {}),
    })
  }
  return {
    'organization-name': submitter.organization,
    'date-range': { 'start-datetime': `${day}T00:00:00Z`, 'end-datetime': `${day}T23:59:59Z` },
    'contact-info': submitter.contact,
    'report-id': `${day}.${domain}@${submitter.hostname}`,
    policies,
  }
}

/** RFC 8460 5.3: `<submitter>!<policy domain>!<begin>!<end>!<unique id>.json.gz` (seconds since the epoch). */
export function reportFilename(submitter: string, domain: string, day: string): string {
  const begin = Date.parse(`${day}T00:00:00Z`) / 1000
  return `${submitter}!${domain}!${begin}!${begin + 86_399}!${day.replace(/-/g, '')}.json.gz`
}

/** Why a destination did not take the report, or null when it did. */
type Outcome = string | null

async function postReport(deps: Deps, url: string, body: Uint8Array, ca: string[] | undefined): Promise<Outcome> {
  try {
    const res = await safeFetch(url, {
      method: 'POST', body, headers: { 'content-type': 'application/tlsrpt+gzip', 'user-agent': `mailctl TLS reporting (${deps.config.hostname})` },
    }, { ...safeFetchOptions(deps.config), maxRedirects: 0, maxBodyBytes: 4096, ...(ca ? { ca } : {}) })
    return res.status >= 200 && res.status < 300 ? null : `answered ${res.status}`
  } catch (err) {
    return err instanceof Error ? err.message : String(err)
  }
}

async function mailReport(deps: Deps, sender: SystemSender, to: string, day: string, domain: string, report: TlsReport, gz: Buffer): Promise<Outcome> {
  const from = deps.config.systemFrom
  const address = normalizeEmail(to)
  if (!isEmail(address)) return `not an address: ${to}`
  if (!from) return 'MAILCTL_SYSTEM_FROM is not set'
  const owner = await sender.ownerOf(deps.store, from)
  if (!owner) return `the domain of MAILCTL_SYSTEM_FROM (${from}) is not a verified domain of any project`
  const submitter = deps.config.hostname
  const filename = reportFilename(submitter, domain, day)
  const total = report.policies.reduce((a, p) => a + p.summary['total-successful-session-count'] + p.summary['total-failure-session-count'], 0)
  const failed = report.policies.reduce((a, p) => a + p.summary['total-failure-session-count'], 0)
  await sender.queue(deps, owner.projectId, from, 'tlsrpt.send', {
    to: address, fromName: 'mailctl TLS reporting',
    subject: `Report Domain: ${domain} Submitter: ${submitter} Report-ID: <${report['report-id']}>`,
    text: `This is an aggregate TLS report (RFC 8460) from ${submitter} for ${domain}, ${day} (UTC): ${total} sessions, ${failed} of them failed.\r\nThe report is attached as ${filename}.\r\n`,
    headers: { 'TLS-Report-Domain': domain, 'TLS-Report-Submitter': submitter, 'Auto-Submitted': 'auto-generated' },
    attachments: [{ filename, content: gz.toString('base64'), contentType: 'application/tlsrpt+gzip', disposition: 'attachment', size: gz.length }],
    sourceId: TLS_REPORT_SOURCE, priority: 'bulk',
  })
  return null
}

/** How many day and domain pairs one run handles (the next run, an hour later, takes the rest). */
const PER_RUN = 2000
/** A report no destination took is tried at each run for this long after the first failure. */
const GIVE_UP_MS = 24 * 3600_000

/**
 * Sends the reports of days before `now`'s UTC day (see the top of this file). `ca`: MAILCTL_MTA_STS_CA's
 * certificates. `sender` queues the emailed reports (src/modules/emails/system.ts). Returns what it did, for the
 * job's result.
 */
export async function sendTlsReports(deps: Deps, sender: SystemSender, now: Date, ca?: string[]): Promise<{ sent: number; failed: number; noRecord: number; gaveUp: number }> {
  const out = { sent: 0, failed: 0, noRecord: 0, gaveUp: 0 }
  const resolver = resolverFor(deps.config, { cache: true })
  const organization = deps.config.hostname
  const contact = deps.config.systemFrom ?? `postmaster@${deps.config.hostname}`
  for (const { day, domain } of await finishedDays(deps.store, utcDay(now), PER_RUN)) {
    let rua: string[]
    try {
      rua = tlsrptRua(await resolver.resolveTxt(`_smtp._tls.${domain}`))
    } catch {
      rua = []
    }
    if (!rua.length) {
      await deleteCounts(deps.store, day, domain)
      out.noRecord++
      continue
    }
    const rows = await countsOf(deps.store, day, domain)
    const report = buildReport(day, domain, rows, { organization, contact, hostname: deps.config.hostname })
    const gz = gzipSync(JSON.stringify(report))
    const errors: string[] = []
    let took = false
    for (const uri of rua) {
      let why: Outcome
      try {
        why = uri.toLowerCase().startsWith('mailto:')
          ? await mailReport(deps, sender, decodeURIComponent(uri.slice(7).split('?')[0]), day, domain, report, gz)
          : await postReport(deps, uri, gz, ca)
      } catch (err) {
        why = err instanceof Error ? err.message : String(err)
      }
      if (why === null) took = true
      else errors.push(`${uri}: ${why}`)
    }
    if (errors.length) deps.log.warn('TLS report not taken by every destination', { domain, day, errors })
    if (took) {
      await deleteCounts(deps.store, day, domain)
      out.sent++
      continue
    }
    const firstFailure = rows.find((r) => r.failedAt)?.failedAt
    if (firstFailure && now.getTime() - firstFailure.getTime() >= GIVE_UP_MS) {
      deps.log.error('TLS report given up', { domain, day, errors })
      await deleteCounts(deps.store, day, domain)
      out.gaveUp++
    } else {
      if (!firstFailure) await markFailed(deps.store, day, domain, now)
      out.failed++
    }
  }
  return out
}

