/**
 * TLS results of delivery sessions for TLS reporting (RFC 8460), counted as direct delivery makes them
 * (direct.ts) and added to the store's per-day counts (`tls_report_counts`) every minute and when the
 * transport closes. The daily report job (report.ts) turns a finished day's counts into reports.
 *
 * A session is counted once per recipient domain: a new connection for the domain of the message that
 * opened it, a reused one the first time it carries mail for another domain. Its result:
 * - under an MTA-STS policy (`testing` or `enforce`): success only over TLS with a certificate valid for the
 *   MX host's name (checked in `testing` too, although delivery goes on); otherwise the RFC 8460 result
 *   type (`starttls-not-supported`, `certificate-expired`, `certificate-host-mismatch`,
 *   `certificate-not-trusted`, `validation-failure`);
 * - without a policy (`no-policy-found`): success over TLS whatever the certificate (opportunistic TLS
 *   checks none), `starttls-not-supported` in clear, `validation-failure` after a failed handshake.
 * A connection refused or lost before TLS was tried is no TLS session and is not counted.
 */
import type { Store } from '../../db/client'
import type { StsPolicy } from '../outbound/mta-sts'

export type TlsResultType =
  | 'starttls-not-supported' | 'certificate-host-mismatch' | 'certificate-expired' | 'certificate-not-trusted'
  | 'validation-failure' | 'sts-policy-fetch-error' | 'sts-policy-invalid' | 'sts-webpki-invalid'

export type TlsResult = 'success' | TlsResultType

/** The RFC 8460 result type of a certificate or handshake error code (Node's and OpenSSL's names). */
export function certResult(code: string | null | undefined): TlsResultType {
  const c = (code ?? '').toUpperCase()
  if (c.includes('CERT_HAS_EXPIRED') || c.includes('CERT_NOT_YET_VALID')) return 'certificate-expired'
  if (c.includes('ALTNAME') || c.includes('HOSTNAME') || c.includes('HOST_MISMATCH')) return 'certificate-host-mismatch'
  if (/SELF_SIGNED|UNABLE_TO_GET_ISSUER|UNABLE_TO_VERIFY_LEAF|CERT_UNTRUSTED|CERT_REJECTED|CHAIN_TOO_LONG/.test(c)) return 'certificate-not-trusted'
  return 'validation-failure'
}

/** The policy-string of RFC 8460 (the policy's lines) for an MTA-STS policy. */
export function policyLines(p: StsPolicy): string[] {
  return ['version: STSv1', `mode: ${p.mode}`, ...p.mx.map((m) => `mx: ${m}`), `max_age: ${p.maxAgeSeconds}`]
}

/** `sourceId` of a TLS report's email (system mail): built as `multipart/report; report-type=tlsrpt` (deliver.ts). */
export const TLS_REPORT_SOURCE = 'tls-report'

/** The UTC day of `at`, `YYYY-MM-DD`. */
export const utcDay = (at: Date): string => at.toISOString().slice(0, 10)

interface Count { day: string; domain: string; policyType: string; policy: string; mxHost: string; result: string; sessions: number }

/** How often counts go to the store. */
const FLUSH_MS = 60_000

/** Counts in memory between flushes; `add` is cheap and never touches the store. */
export class TlsResults {
  private counts = new Map<string, Count>()
  private timer: Timer | null = null
  private flushing: Promise<void> | null = null

  constructor(private store: Store, private onError: (err: unknown) => void = () => {}, private flushMs = FLUSH_MS) {}

  add(domain: string, policy: StsPolicy | null, mxHost: string, result: TlsResult, at = new Date()): void {
    const c: Count = {
      day: utcDay(at), domain: domain.toLowerCase(), policyType: policy ? 'sts' : 'no-policy-found',
      policy: policy ? policyLines(policy).join('\n') : '', mxHost: mxHost.toLowerCase().replace(/\.$/, ''), result, sessions: 1,
    }
    const key = `${c.day}\u0000${c.domain}\u0000${c.policy}\u0000${c.mxHost}\u0000${c.result}`
    const hit = this.counts.get(key)
    if (hit) hit.sessions++
    else this.counts.set(key, c)
    if (!this.timer) {
      this.timer = setTimeout(() => { this.timer = null; void this.flush() }, this.flushMs)
      this.timer.unref?.()
    }
  }

  /** Adds the counts so far to the store (summed with what other nodes wrote); kept for the next flush on failure. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing
    if (!this.counts.size) return
    const batch = [...this.counts.values()]
    this.counts.clear()
    this.flushing = (async () => {
      try {
        const { addCounts } = await import('./repo')
        await addCounts(this.store, batch)
      } catch (err) {
        for (const c of batch) {
          const key = `${c.day}\u0000${c.domain}\u0000${c.policy}\u0000${c.mxHost}\u0000${c.result}`
          const hit = this.counts.get(key)
          if (hit) hit.sessions += c.sessions
          else this.counts.set(key, c)
        }
        this.onError(err)
      }
    })()
    try { await this.flushing } finally { this.flushing = null }
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.flush()
  }
}
