/**
 * MTA-STS (RFC 8461) for direct delivery: before delivering to a domain, `_mta-sts.<domain>` TXT
 * (`v=STSv1; id=...`) says whether it has a policy; the policy is fetched from
 * `https://mta-sts.<domain>/.well-known/mta-sts.txt` (a valid certificate, no redirect, 200, text/plain)
 * and cached for its `max_age` (while the TXT id is unchanged; a policy in cache is also kept when the
 * TXT record or the fetch fails, as the RFC says).
 *
 * - `enforce`: only MX hosts matching the policy's `mx` patterns are tried, over TLS with a certificate
 *   valid for the MX host's name, and never in clear (pool.ts: `requireTls`). No matching host, or no
 *   valid TLS: the attempt is deferred (4.7.5), never sent in clear.
 * - `testing` and `none`: delivery as usual (opportunistic TLS); a mismatch is logged.
 *
 * The policy host and the MX hosts are reached like any delivery target: internal addresses need
 * MAILCTL_DELIVERY_ALLOW_HOSTS. MAILCTL_MTA_STS_CA adds trusted CA certificates (tests run the policy
 * host and the MX on loopback with a test CA). Sessions under a policy are counted for TLS reporting (src/mail/tlsrpt/).
 */
import { readFileSync } from 'node:fs'
import type { Config } from '../../config'
import type { Resolver } from '../../dns'
import { safeFetch } from '../../net/safe-fetch'

/** MAILCTL_MTA_STS_CA: a PEM file path or the PEM text itself; unreadable is an error at start-up. */
export function mtaStsCa(config: Config): string[] | undefined {
  const v = config.mtaStsCa
  if (!v) return undefined
  if (v.includes('-----BEGIN')) return [v]
  try {
    return [readFileSync(v, 'utf8')]
  } catch (err) {
    throw new Error(`MAILCTL_MTA_STS_CA: cannot read ${v}: ${err instanceof Error ? err.message : String(err)}`)
  }
}

export interface StsPolicy {
  mode: 'enforce' | 'testing' | 'none'
  /** MX patterns: `mx.example.com` or `*.example.com` (one left-most label). */
  mx: string[]
  maxAgeSeconds: number
}

/** RFC 8461 section 3.2: `key: value` lines; null when the text is no valid STSv1 policy. */
export function parsePolicy(text: string): StsPolicy | null {
  const fields = new Map<string, string[]>()
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':')
    if (i <= 0) continue
    const k = line.slice(0, i).trim().toLowerCase()
    const v = line.slice(i + 1).trim()
    fields.set(k, [...(fields.get(k) ?? []), v])
  }
  const one = (k: string) => fields.get(k)?.[0]
  if (one('version') !== 'STSv1') return null
  const mode = one('mode')
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none') return null
  const maxAge = one('max_age')
  if (!maxAge || !/^\d{1,10}$/.test(maxAge)) return null
  const mx = (fields.get('mx') ?? []).map((m) => m.toLowerCase().replace(/\.$/, '')).filter(Boolean)
  if (mode !== 'none' && !mx.length) return null
  return { mode, mx, maxAgeSeconds: Math.min(Number(maxAge), 31_557_600) }
}

/** Whether MX host `host` matches a policy pattern (a `*.` wildcard stands for exactly one left-most label). */
export function mxMatches(pattern: string, host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '')
  if (pattern.startsWith('*.')) {
    const dot = h.indexOf('.')
    return dot > 0 && h.slice(dot + 1) === pattern.slice(2)
  }
  return h === pattern
}

/** The `id` of a `v=STSv1; id=...` TXT record among `records`, or null. */
export function stsRecordId(records: string[]): string | null {
  const sts = records.filter((r) => /^v=STSv1\s*(;|$)/.test(r.trim()))
  if (sts.length !== 1) return null
  const m = /(?:^|;)\s*id=([A-Za-z0-9]{1,32})\s*(;|$)/.exec(sts[0])
  return m ? m[1] : null
}

export interface MtaStsOptions {
  /** Extra trusted CA certificates (PEM): MAILCTL_MTA_STS_CA. */
  ca?: string[]
  /** MAILCTL_DELIVERY_ALLOW_HOSTS: the policy host may resolve to these internal targets. */
  allowHosts?: readonly string[]
  dnsServers?: readonly string[]
  /** Policy fetch timeout (RFC 8461 suggests a short one). */
  timeoutMs?: number
  onWarning?: (message: string, fields: Record<string, unknown>) => void
}

interface Cached { id: string; policy: StsPolicy; until: number }

/** A domain's TXT record is looked up again after this long. */
const RECHECK_MS = 60_000

/** Policies per recipient domain, discovered and cached as above. */
export class MtaSts {
  private cache = new Map<string, Cached>()
  /** Answers of the last RECHECK_MS per domain: the TXT record is not looked up for every message. */
  private recent = new Map<string, { at: number; policy: StsPolicy | null }>()

  constructor(private resolver: Resolver, private opts: MtaStsOptions = {}) {}

  /** The domain's policy, or null when it has none (or none could be had and nothing is cached). */
  async policyFor(domain: string): Promise<StsPolicy | null> {
    const d = domain.toLowerCase()
    const hit = this.recent.get(d)
    if (hit && Date.now() - hit.at < RECHECK_MS) return hit.policy
    const policy = await this.discover(d)
    if (this.recent.size >= 10_000) this.recent.clear()
    this.recent.set(d, { at: Date.now(), policy })
    return policy
  }

  private async discover(d: string): Promise<StsPolicy | null> {
    const cached = this.cache.get(d)
    const fresh = cached && cached.until > Date.now() ? cached : undefined
    let id: string | null
    try {
      id = stsRecordId(await this.resolver.resolveTxt(`_mta-sts.${d}`))
    } catch {
      return fresh?.policy ?? null
    }
    if (!id) return fresh?.policy ?? null
    if (fresh && fresh.id === id) return fresh.policy
    try {
      const res = await safeFetch(`https://mta-sts.${d}/.well-known/mta-sts.txt`, {}, {
        allowHosts: this.opts.allowHosts, dnsServers: this.opts.dnsServers, ca: this.opts.ca,
        maxRedirects: 0, timeoutMs: this.opts.timeoutMs ?? 10_000, maxBodyBytes: 64 * 1024,
      })
      const type = (res.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()
      const policy = res.status === 200 && type === 'text/plain' ? parsePolicy(res.body) : null
      if (!policy) throw new Error(`answered ${res.status} ${type || 'without a content type'}${res.status === 200 && type === 'text/plain' ? ', not a valid STSv1 policy' : ''}`)
      if (this.cache.size >= 10_000) this.cache.clear()
      this.cache.set(d, { id, policy, until: Date.now() + policy.maxAgeSeconds * 1000 })
      return policy
    } catch (err) {
      this.opts.onWarning?.('MTA-STS policy could not be fetched', { domain: d, error: err instanceof Error ? err.message : String(err) })
      return fresh?.policy ?? null
    }
  }
}
