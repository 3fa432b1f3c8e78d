/**
 * MAILCTL_OUTBOUND=smtp://user:pass@host:port (or smtps:// for implicit TLS): every message is relayed
 * through one smart host, with the same pooling, throttling and reply handling as direct delivery. A
 * 250 from the relay means "sent", not "delivered": the relay delivers on our behalf.
 */
import { attempt, type SmtpTransportOptions } from './direct'
import { ConnectionPool, targetLabel, type SmtpTarget } from './pool'
import { parseReply } from './replies'
import { Throttle, throttleKind } from './throttle'
import type { Delivery, Envelope, Transport } from './types'

/** Parses the smart-host URL of MAILCTL_OUTBOUND. */
export function smartHostTarget(url: string): SmtpTarget {
  const u = new URL(url)
  const secure = u.protocol === 'smtps:'
  if (u.protocol !== 'smtp:' && !secure) throw new Error(`MAILCTL_OUTBOUND: unsupported scheme ${u.protocol}`)
  const user = decodeURIComponent(u.username)
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    servername: u.hostname.replace(/^\[|\]$/g, ''),
    secure,
    ...(user ? { auth: { user, pass: decodeURIComponent(u.password) } } : {}),
  }
}

export class SmartHostTransport implements Transport {
  readonly name = 'smtp' as const
  private pool: ConnectionPool
  private throttle: Throttle

  constructor(private target: SmtpTarget, opts: SmtpTransportOptions) {
    this.pool = new ConnectionPool({ name: opts.hostname, idleMs: opts.idleMs, connectTimeoutMs: opts.connectTimeoutMs, socketTimeoutMs: opts.socketTimeoutMs })
    this.throttle = new Throttle(opts.throttle)
  }

  async deliver(env: Envelope, raw: Buffer, settle: (d: Delivery) => Promise<void>): Promise<void> {
    const dest = this.throttle.get(targetLabel(this.target))
    const slot = await dest.acquire()
    if (slot !== true) {
      // Stopping, or shed by a stalled destination: not started, so not settled; the pipeline hands the
      // message back to the queue.
      if (dest.stopped || slot === 'shed') return
      return settle({ kind: 'deferred', reply: parseReply('451 4.4.5 Too many messages waiting for the smart host in this process'), host: null, throttle: true })
    }
    try {
      const r = await attempt(this.pool, this.target, env, raw, false, settle, (reply) => dest.throttled(throttleKind(reply)))
      if (r.settled) { dest.success(); return }
      return settle({ kind: 'deferred', reply: r.reply, host: targetLabel(this.target), throttle: r.throttle })
    } finally {
      dest.release()
    }
  }

  async destinationOf(): Promise<string> { return targetLabel(this.target) }

  capacityOf(key: string): number { return this.throttle.capacity(key) }

  shareAmong(nodes: number): void { this.throttle.shareAmong(nodes) }

  stopStarting(): void { this.throttle.stop() }

  connectionsOf(key: string): number { return this.throttle.connections(key) }

  shed(key: string): number { return this.throttle.shed(key) }

  destinations() { return this.throttle.snapshot() }

  onWire(): number { return this.pool.onWire }

  async close(): Promise<void> { this.pool.closeAll() }
}
