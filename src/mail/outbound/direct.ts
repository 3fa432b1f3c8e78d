/**
 * MAILCTL_OUTBOUND=direct: each message goes to its recipient's mail servers, found in DNS
 * (MAILCTL_DNS_SERVERS), on MAILCTL_MX_PORT. Hosts are tried in preference order while they cannot be
 * reached or refuse the session; a reply to the message itself (4xx: retry later, 5xx: bounce) ends the
 * attempt. Targets on internal addresses are refused unless allowed (guard.ts). Concurrency is limited per destination (the first MX host) by the AIMD throttle, and
 * connections are pooled per address.
 */
import type { Resolver } from '../../dns'
import { ConnectError, ConnectionPool, targetLabel, type SendOutcome, type SmtpConn, type SmtpTarget, type Stage } from './pool'
import { parseAllowList } from '../../net/address-guard'
import { guardRoute } from './guard'
import { MtaSts, mxMatches } from './mta-sts'
import { RouteError, resolveRoute, type MxHost } from './mx'
import { parseReply, shouldSuppress, verdictOf, type SmtpReply } from './replies'
import { Throttle, throttleKind, type Slot, type ThrottleOptions } from './throttle'
import type { Delivery, Envelope, Transport } from './types'
import type { TlsResults } from '../tlsrpt/results'
import type { StsPolicy } from './mta-sts'

/** Successful routes are reused this long (failures are never cached here). */
const ROUTE_TTL_MS = 30_000

export interface SmtpTransportOptions {
  /** EHLO name (MAILCTL_HOSTNAME). */
  hostname: string
  throttle?: ThrottleOptions
  idleMs?: number
  connectTimeoutMs?: number
  socketTimeoutMs?: number
  /** MAILCTL_DELIVERY_ALLOW_HOSTS: MX hosts, addresses or CIDR ranges direct delivery may reach although internal. */
  allowHosts?: readonly string[]
  /** MAILCTL_MTA_STS_CA: extra CAs for MTA-STS policy hosts and enforced MX certificates (mta-sts.ts). */
  mtaStsCa?: string[]
  /** MAILCTL_DNS_SERVERS, for the policy fetch. */
  dnsServers?: readonly string[]
  /** TLS reporting's counts (src/mail/tlsrpt/results.ts; MAILCTL_TLS_REPORTS): none when unset. */
  tlsResults?: TlsResults
  /** Where MTA-STS says something worth a warning (a failed fetch, an MX a testing policy would refuse). */
  onWarning?: (message: string, fields: Record<string, unknown>) => void
}

/** Told of each session a message used (or of the TLS failure that ended one): TLS reporting counts them. */
export type TlsHook = (conn: SmtpConn | null, err: ConnectError | null) => void

/** Sends on one connection and turns the reply into a Delivery (or null: try the next host). */
export async function attempt(
  pool: ConnectionPool, target: SmtpTarget, env: Envelope, raw: Buffer, final: boolean,
  settle: (d: Delivery) => Promise<void>,
  onThrottle: (reply: SmtpReply) => void,
  tls?: TlsHook,
): Promise<{ settled: true } | { settled: false; reply: SmtpReply; throttle: boolean; stage: Stage; clearReason: string | null }> {
  const host = targetLabel(target)
  let conn: SmtpConn
  let res: SendOutcome
  for (let tries = 0; ; tries++) {
    let acquired: Awaited<ReturnType<ConnectionPool['acquire']>>
    pool.onWire++
    try {
      acquired = await pool.acquire(target)
    } catch (err) {
      pool.onWire--
      if (!(err instanceof ConnectError)) throw err
      tls?.(null, err)
      const throttle = verdictOf(err.outcome.reply) === 'throttle'
      if (throttle) { onThrottle(err.outcome.reply); pool.closeIdle(target) }
      return { settled: false, reply: err.outcome.reply, throttle, stage: 'connect', clearReason: null }
    }
    conn = acquired.conn
    tls?.(conn, null)
    try {
      res = await conn.send(env.from, env.to, raw)
    } catch (err) {
      pool.onWire--
      await pool.release(conn, 'close')
      throw err
    }
    pool.onWire--
    // A pooled connection that turned out closed before the message started: once more on a new one.
    if (!res.ok && res.stage === 'connect' && acquired.reused && tries === 0) {
      await pool.release(conn, 'close')
      continue
    }
    break
  }
  if (res.ok) {
    try {
      await settle({ kind: 'accepted', final, host, reply: res.reply, secure: res.secure, clearReason: res.clearReason })
    } finally {
      await pool.release(conn, 'clean')
    }
    return { settled: true }
  }
  const verdict = verdictOf(res.reply)
  const closing = res.reply.code === 421 || res.reply.code === 0 || res.stage === 'connect'
  if (verdict === 'permanent' && res.stage !== 'connect') {
    const suppress = res.stage === 'mail' ? false : shouldSuppress(res.reply, res.stage === 'rcpt' ? 'rcpt' : 'other')
    try {
      await settle({ kind: 'bounced', reply: res.reply, host, suppress, clearReason: res.clearReason ?? null })
    } finally {
      await pool.release(conn, closing ? 'close' : 'needs-reset')
    }
    return { settled: true }
  }
  await pool.release(conn, closing ? 'close' : 'needs-reset')
  const throttle = verdict === 'throttle'
  if (throttle) { onThrottle(res.reply); pool.closeIdle(target) }
  return { settled: false, reply: res.reply, throttle, stage: res.stage, clearReason: res.clearReason ?? null }
}

export class DirectTransport implements Transport {
  readonly name = 'direct' as const
  private pool: ConnectionPool
  private throttle: Throttle

  /** MAILCTL_DELIVERY_ALLOW_HOSTS, parsed: internal targets the operator allows (guard.ts). */
  private allow: string[]

  /** MTA-STS policies of recipient domains (mta-sts.ts). */
  private sts: MtaSts
  private warn: (message: string, fields: Record<string, unknown>) => void

  private tlsResults: TlsResults | null

  constructor(private resolver: Resolver, private port: number, opts: SmtpTransportOptions) {
    this.tlsResults = opts.tlsResults ?? null
    this.allow = parseAllowList(opts.allowHosts ?? [])
    this.warn = opts.onWarning ?? (() => {})
    this.sts = new MtaSts(resolver, { ca: opts.mtaStsCa, allowHosts: opts.allowHosts, dnsServers: opts.dnsServers, onWarning: this.warn })
    this.pool = new ConnectionPool({ name: opts.hostname, idleMs: opts.idleMs, connectTimeoutMs: opts.connectTimeoutMs, socketTimeoutMs: opts.socketTimeoutMs, tlsCa: opts.mtaStsCa })
    this.throttle = new Throttle(opts.throttle)
  }

  /** Routes of recent domains (the resolver caches answers too; this skips the look-up work entirely). */
  private routes = new Map<string, { at: number; hosts: MxHost[] }>()

  private async route(domain: string): Promise<MxHost[]> {
    const hit = this.routes.get(domain)
    if (hit && Date.now() - hit.at < ROUTE_TTL_MS) return hit.hosts
    const hosts = guardRoute(domain, await resolveRoute(this.resolver, domain), this.allow)
    if (this.routes.size >= 10_000) this.routes.clear()
    this.routes.set(domain, { at: Date.now(), hosts })
    return hosts
  }

  async deliver(env: Envelope, raw: Buffer, settle: (d: Delivery) => Promise<void>): Promise<void> {
    let hosts: MxHost[]
    try {
      hosts = await this.route(env.domain)
    } catch (err) {
      if (!(err instanceof RouteError)) throw err
      if (err.permanent) return settle({ kind: 'bounced', reply: err.reply, host: null, suppress: err.suppress })
      return settle({ kind: 'deferred', reply: err.reply, host: null, throttle: false })
    }
    // MTA-STS: enforce keeps the MX hosts the policy names and demands valid TLS with them.
    const policy = await this.sts.policyFor(env.domain)
    let requireTls = false
    if (policy && policy.mode !== 'none') {
      const matching = hosts.filter((h) => policy.mx.some((p) => mxMatches(p, h.name)))
      if (policy.mode === 'enforce') {
        if (!matching.length) {
          return settle({ kind: 'deferred', reply: parseReply(`451 4.7.5 No MX host of ${env.domain} matches its MTA-STS policy (mx: ${policy.mx.join(', ')}); not delivered`), host: null, throttle: false })
        }
        hosts = matching
        requireTls = true
      } else if (matching.length < hosts.length) {
        this.warn('MTA-STS testing policy: MX hosts outside the policy', { domain: env.domain, mx: policy.mx, hosts: hosts.map((h) => h.name) })
      }
    }
    const dest = this.throttle.get(hosts[0].name)
    const slot = await dest.acquire()
    if (slot !== true) {
      // Stopping, or shed by a stalled destination: not started, so not settled; the pipeline hands the
      // message back to the queue.
      if (dest.stopped || slot === 'shed') return
      return settle({ kind: 'deferred', reply: parseReply(`451 4.4.5 Too many messages waiting for ${dest.key} in this process`), host: null, throttle: true })
    }
    let held = true
    try {
      let last: { reply: SmtpReply; host: string; throttle: boolean; stage: Stage; clearReason: string | null } | null = null
      // One throttling refusal (a connection over the receiver's limit, a message over its rate) is tried
      // again once in this attempt, after the throttle lowered the limit or the pace: the wait is the
      // receiver's own ask, and a deferral through the queue would come back 15 s later.
      let retried = false
      for (const mx of hosts) {
        for (const address of mx.addresses) {
          const target: SmtpTarget = { host: address, port: this.port, servername: mx.name, ...(requireTls ? { requireTls } : {}) }
          for (;;) {
            const r = await attempt(this.pool, target, env, raw, true, settle, (reply) => dest.throttled(throttleKind(reply)), this.tlsHook(env.domain, policy, mx.name))
            if (r.settled) {
              dest.success()
              return
            }
            last = { reply: r.reply, host: targetLabel(target), throttle: r.throttle, stage: r.stage, clearReason: r.clearReason }
            if (r.throttle && !retried && (r.stage === 'connect' || r.stage === 'data')) {
              retried = true
              let again: Slot
              if (throttleKind(r.reply) === 'connections') {
                // Back in line for a slot under the lowered connection limit.
                held = false
                dest.release()
                again = await dest.acquire()
                held = again === true
              } else {
                again = await dest.turn()
              }
              if (again === true) continue
              // Stopping, or shed: not sent, so handed back to the queue by the pipeline.
              if (dest.stopped || again === 'shed') return
            }
            break
          }
          // A reply to the message itself (not to the session) ends this attempt: retry later. So does a
          // connection lost after the message was sent (it may have been accepted: no second host now).
          if (last.stage === 'data' || (last.stage !== 'connect' && last.reply.code !== 421 && last.reply.code !== 0 && !last.throttle)) {
            return settle({ kind: 'deferred', reply: last.reply, host: last.host, throttle: last.throttle, clearReason: last.clearReason })
          }
        }
      }
      // Every MX host has at least one address (resolveRoute), so some attempt was made.
      if (!last) throw new Error(`no address to deliver to for ${env.domain}`)
      return settle({ kind: 'deferred', reply: last.reply, host: last.host, throttle: last.throttle, clearReason: last.clearReason })
    } finally {
      if (held) dest.release()
    }
  }

  /**
   * Counts a session's TLS result for `domain` (TLS reporting): once per connection and domain, under the
   * domain's MTA-STS policy (testing or enforce: the certificate must be valid) or as no-policy-found.
   */
  private tlsHook(domain: string, policy: StsPolicy | null, mxHost: string): TlsHook | undefined {
    const results = this.tlsResults
    if (!results) return undefined
    const sts = policy && policy.mode !== 'none' ? policy : null
    return (conn, err) => {
      if (conn) {
        if (conn.firstFor(domain)) results.add(domain, sts, mxHost, conn.tlsResult(sts !== null))
      } else if (err?.tlsResult) {
        results.add(domain, sts, mxHost, err.tlsResult)
      }
    }
  }

  async destinationOf(domain: string): Promise<string> {
    try {
      return (await this.route(domain))[0].name
    } catch {
      return domain
    }
  }

  capacityOf(key: string): number { return this.throttle.capacity(key) }

  shareAmong(nodes: number): void { this.throttle.shareAmong(nodes) }

  stopStarting(): void { this.throttle.stop() }

  connectionsOf(key: string): number { return this.throttle.connections(key) }

  shed(key: string): number { return this.throttle.shed(key) }

  destinations() { return this.throttle.snapshot() }

  onWire(): number { return this.pool.onWire }

  async close(): Promise<void> {
    this.pool.closeAll()
    await this.tlsResults?.close()
  }
}
