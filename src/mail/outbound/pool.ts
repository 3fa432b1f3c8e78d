/**
 * SMTP client connections (smtp-client.ts), pooled per target (address and port) and reused for the
 * next message to the same place. STARTTLS is used whenever the server offers it (opportunistic:
 * certificates are not checked, a refused STARTTLS continues in clear, as MTAs do); implicit TLS for
 * smtps:// smart hosts.
 *
 * A failed STARTTLS handshake (a TLS 1.0-only server, no shared cipher) ends that session; for MX
 * delivery the pool then connects again at once without STARTTLS, and skips STARTTLS with that target
 * for TLS_FAILURE_MEMORY_MS, as Postfix and Exim (`tls_tempfail_tryclear`) do. Each message sent in
 * clear after such a failure carries the reason (`clearReason`), which the attempt records. A smart host
 * with credentials never falls back: its password would go in clear.
 */
import { isIP } from 'node:net'
import { rootCertificates } from 'node:tls'
import { certResult, type TlsResult, type TlsResultType } from '../tlsrpt/results'
import { parseReply, type SmtpReply } from './replies'
import { isTlsHandshakeFailure, SmtpClient, SmtpClientError } from './smtp-client'

export interface SmtpTarget {
  /** Address (or host name) to connect to. */
  host: string
  port: number
  /** The server's name: TLS SNI and the label of the host that accepted. */
  servername?: string
  /** Implicit TLS from the first byte (smtps://). */
  secure?: boolean
  auth?: { user: string; pass: string }
  /** A policy demands TLS with a valid certificate for `servername` (MTA-STS enforce): never clear. */
  requireTls?: boolean
}

export const targetKey = (t: SmtpTarget) => `${t.secure ? 'smtps' : 'smtp'}://${t.auth ? `${t.auth.user}@` : ''}${t.host}:${t.port}${t.requireTls ? `#tls=${t.servername ?? ''}` : ''}`
export const targetLabel = (t: SmtpTarget) => (t.servername && t.servername !== t.host ? `${t.servername}[${t.host}]:${t.port}` : `${t.host}:${t.port}`)

export interface PoolOptions {
  /** EHLO name (MAILCTL_HOSTNAME). */
  name: string
  /** Idle connections are closed after this long. */
  idleMs?: number
  /** A connection is retired after this many messages. */
  maxMessages?: number
  connectTimeoutMs?: number
  greetingTimeoutMs?: number
  /** Inactivity timeout of a connection in use. */
  socketTimeoutMs?: number
  /** Extra CAs trusted when a policy requires TLS (MAILCTL_MTA_STS_CA). */
  tlsCa?: string[]
}

/** Where a failure happened: before any message was started, or at which command. */
export type Stage = 'connect' | 'mail' | 'rcpt' | 'data'

/** `clearReason`: why a session that could have been encrypted was not (null when encrypted or STARTTLS was not offered). */
export type SendOutcome =
  | { ok: true; reply: SmtpReply; secure: boolean; clearReason: string | null }
  | { ok: false; reply: SmtpReply; stage: Stage; message: string; clearReason?: string | null }

/** A connection that could not be opened (or authenticated); `outcome.stage` is 'connect'. */
export class ConnectError extends Error {
  /**
   * `tlsHandshake`: it failed in the STARTTLS handshake (smtp-client.ts isTlsHandshakeFailure).
   * `tlsResult`: the session failed for TLS (a policy demanded it: no STARTTLS, a refused one, a bad
   * certificate), as TLS reporting names it; null when it failed for another reason.
   */
  constructor(readonly outcome: Extract<SendOutcome, { ok: false }>, readonly tlsHandshake = false, readonly tlsResult: TlsResultType | null = null) {
    super(outcome.message)
  }
}

/** The TLS reporting result type of a session that failed (SmtpConn.open), or null when TLS had no part in it. */
function tlsFailureOf(err: unknown): TlsResultType | null {
  if (!(err instanceof SmtpClientError)) return null
  if (err.command === 'TLSPOLICY') return 'starttls-not-supported'
  if (isTlsHandshakeFailure(err)) return certResult(/^TLS handshake failed: ([A-Z0-9_]+) /.exec(err.message)?.[1] ?? err.message)
  return null
}

/** The system's CAs plus `extra` (a `ca` option replaces the system's list; undefined: the system's alone). */
let trustedCache: { extra: string[]; all: string[] } | null = null
function trusted(extra: string[] | undefined): string[] | undefined {
  if (!extra?.length) return undefined
  if (trustedCache?.extra !== extra) trustedCache = { extra, all: [...rootCertificates, ...extra] }
  return trustedCache.all
}

/** After a failed STARTTLS handshake, connections to that target skip STARTTLS this long. */
export const TLS_FAILURE_MEMORY_MS = 3_600_000

function stageOf(command: string | undefined, connected: boolean): Stage {
  if (!connected) return 'connect'
  // Refused by the client before anything went out (for example a connection found closed).
  if (command === 'API') return 'connect'
  if (command?.startsWith('MAIL')) return 'mail'
  if (command?.startsWith('RCPT')) return 'rcpt'
  // DATA, or a connection lost mid-session: the message may have gone out.
  return 'data'
}

function failure(err: unknown, connected: boolean): Extract<SendOutcome, { ok: false }> {
  const e = err instanceof SmtpClientError ? err : new SmtpClientError(err instanceof Error ? err.message : String(err), 'ERROR', undefined, 'CONN')
  const reply = e.response ? parseReply(e.response) : { code: 0, enhanced: null, text: `${e.code}: ${e.message}` }
  return { ok: false, reply, stage: stageOf(e.command, connected), message: e.message }
}

export class SmtpConn {
  messages = 0
  idleTimer: Timer | null = null

  /** Recipient domains whose TLS result this session was counted for (TLS reporting counts a session once per domain). */
  private reportedFor: Set<string> | null = null

  private constructor(readonly target: SmtpTarget, private conn: SmtpClient) {}

  /** True the first time for each domain (then the caller counts the session for it). */
  firstFor(domain: string): boolean {
    if (!this.reportedFor) this.reportedFor = new Set()
    if (this.reportedFor.has(domain)) return false
    this.reportedFor.add(domain)
    return true
  }

  /**
   * The session's TLS result for TLS reporting: with `validated` (an MTA-STS policy applies) TLS must come
   * with a certificate valid for the server's name; without, any TLS is a success.
   */
  tlsResult(validated: boolean): TlsResult {
    if (!this.conn.secure) {
      // In clear after a failed handshake (the pool's reason), else STARTTLS was not offered or refused.
      return this.conn.clearReason && !this.conn.clearReason.startsWith('STARTTLS refused') ? 'validation-failure' : 'starttls-not-supported'
    }
    if (!validated || !this.conn.certError) return 'success'
    return certResult(this.conn.certError)
  }

  get dead(): boolean { return this.conn.dead }

  get secure(): boolean { return this.conn.secure }

  /** Why this session went in clear although TLS was tried (null: encrypted, or STARTTLS not offered). */
  get clearReason(): string | null { return this.conn.secure ? null : this.conn.clearReason }

  /**
   * Connects (and authenticates); rejects with a ConnectError. `clearReason`: connect without STARTTLS,
   * for that reason (a failed handshake with this target).
   */
  static async open(target: SmtpTarget, opts: PoolOptions, clearReason?: string): Promise<SmtpConn> {
    // SNI takes a host name, never an address.
    const servername = target.servername && !isIP(target.servername) ? target.servername : undefined
    try {
      const conn = await SmtpClient.open({
        host: target.host,
        port: target.port,
        secure: target.secure ?? false,
        servername,
        name: opts.name,
        auth: target.auth,
        startTls: clearReason === undefined,
        ...(target.requireTls ? { requireTls: { ca: trusted(opts.tlsCa) } } : {}),
        ...(opts.tlsCa?.length && !target.secure ? { checkCa: trusted(opts.tlsCa) } : {}),
        connectionTimeout: opts.connectTimeoutMs ?? 30_000,
        greetingTimeout: opts.greetingTimeoutMs ?? 30_000,
        socketTimeout: opts.socketTimeoutMs ?? 300_000,
      })
      if (clearReason !== undefined) conn.clearReason = clearReason
      return new SmtpConn(target, conn)
    } catch (err) {
      throw new ConnectError(failure(err, false), isTlsHandshakeFailure(err), tlsFailureOf(err))
    }
  }

  async send(from: string, to: string, raw: Buffer): Promise<SendOutcome> {
    if (this.dead) {
      return { ok: false, reply: { code: 0, enhanced: null, text: 'ECONNECTION: connection already closed' }, stage: 'connect', message: 'connection already closed' }
    }
    this.messages++
    try {
      const reply = await this.conn.send(from, to, raw)
      return { ok: true, reply: parseReply(reply), secure: this.conn.secure, clearReason: this.clearReason }
    } catch (err) {
      return { ...failure(err, true), clearReason: this.clearReason }
    }
  }

  /** RSET after a refused message, so the session can carry the next one. */
  reset(): Promise<boolean> {
    return this.conn.reset()
  }

  close(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.conn.close()
  }
}

/** Idle connections per target. A connection is in use by one message at a time. */
export class ConnectionPool {
  private idle = new Map<string, SmtpConn[]>()
  private open = new Set<SmtpConn>()
  /** Set by closeAll: no connection is opened or kept any more. */
  private closed = false
  /** Messages between `acquire` and their reply (see Transport.onWire). */
  onWire = 0
  constructor(readonly opts: PoolOptions) {}

  /** An idle connection to `target`, or a new one. Rejects with a ConnectError (always, once closed). */
  async acquire(target: SmtpTarget): Promise<{ conn: SmtpConn; reused: boolean }> {
    if (this.closed) {
      throw new ConnectError({ ok: false, reply: { code: 0, enhanced: null, text: 'ECONNECTION: the transport is closed' }, stage: 'connect', message: 'the transport is closed' })
    }
    const list = this.idle.get(targetKey(target))
    for (let conn = list?.pop(); conn; conn = list?.pop()) {
      if (conn.idleTimer) clearTimeout(conn.idleTimer)
      conn.idleTimer = null
      if (!conn.dead) return { conn, reused: true }
      this.open.delete(conn)
    }
    const conn = await this.connect(target)
    this.open.add(conn)
    return { conn, reused: false }
  }

  /** Targets whose STARTTLS handshake failed lately: the reason and until when STARTTLS is skipped. */
  private tlsFailures = new Map<string, { reason: string; until: number }>()

  /**
   * A new connection. For MX delivery (no credentials, not implicit TLS), a failed STARTTLS handshake is
   * followed at once by a connection in clear, and remembered (TLS_FAILURE_MEMORY_MS).
   */
  private async connect(target: SmtpTarget): Promise<SmtpConn> {
    const key = targetKey(target)
    const mayFallBack = !target.auth && !target.secure && !target.requireTls
    const failed = mayFallBack ? this.tlsFailures.get(key) : undefined
    if (failed && failed.until > Date.now()) {
      return SmtpConn.open(target, this.opts, `STARTTLS not tried: the TLS handshake with this server failed less than an hour ago (${failed.reason})`)
    }
    try {
      return await SmtpConn.open(target, this.opts)
    } catch (err) {
      if (!(err instanceof ConnectError) || !err.tlsHandshake || !mayFallBack) throw err
      const reason = err.message.slice(0, 200)
      if (this.tlsFailures.size >= 10_000) this.tlsFailures.clear()
      this.tlsFailures.set(key, { reason, until: Date.now() + TLS_FAILURE_MEMORY_MS })
      return SmtpConn.open(target, this.opts, `STARTTLS offered but the TLS handshake failed (${reason}): sent in clear`)
    }
  }

  /** Hands a connection back: kept for reuse when healthy, else closed. */
  async release(conn: SmtpConn, state: 'clean' | 'needs-reset' | 'close'): Promise<void> {
    if (state === 'needs-reset' && !conn.dead) {
      if (!(await conn.reset())) state = 'close'
    }
    if (state === 'close' || this.closed || conn.dead || conn.messages >= (this.opts.maxMessages ?? 500)) {
      conn.close()
      this.open.delete(conn)
      return
    }
    const key = targetKey(conn.target)
    let list = this.idle.get(key)
    if (!list) {
      list = []
      this.idle.set(key, list)
    }
    const idle = list
    idle.push(conn)
    conn.idleTimer = setTimeout(() => {
      const i = idle.indexOf(conn)
      if (i >= 0) idle.splice(i, 1)
      conn.close()
      this.open.delete(conn)
    }, this.opts.idleMs ?? 10_000)
  }

  /** Closes the idle connections to a target (after it said "too many connections"). */
  closeIdle(target: SmtpTarget): void {
    const list = this.idle.get(targetKey(target))
    if (!list) return
    for (const c of list.splice(0)) { c.close(); this.open.delete(c) }
  }

  get openCount(): number { return this.open.size }

  /**
   * Closes every connection, in use or idle, for good (the transport stops). A message waiting for a
   * reply on one fails as refused before it started; it may have reached the server (a reply to DATA
   * lost), as when the process dies.
   */
  closeAll(): void {
    this.closed = true
    for (const c of this.open) c.close()
    this.open.clear()
    this.idle.clear()
  }
}
