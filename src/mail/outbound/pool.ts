/**
 * SMTP client connections (nodemailer's SMTPConnection), pooled per target (address and port) and
 * reused for the next message to the same place. STARTTLS is used whenever the server offers it
 * (opportunistic: certificates are not checked, an upgrade failure continues in clear, as MTAs do);
 * implicit TLS for smtps:// smart hosts.
 */
import { isIP } from 'node:net'
import SMTPConnection from 'nodemailer/lib/smtp-connection'
import type { SMTPConnectionSendInfo } from 'nodemailer/lib/smtp-connection'
import { parseReply, type SmtpReply } from './replies'

export interface SmtpTarget {
  /** Address (or host name) to connect to. */
  host: string
  port: number
  /** The server's name: TLS SNI and the label of the host that accepted. */
  servername?: string
  /** Implicit TLS from the first byte (smtps://). */
  secure?: boolean
  auth?: { user: string; pass: string }
}

export const targetKey = (t: SmtpTarget) => `${t.secure ? 'smtps' : 'smtp'}://${t.auth ? `${t.auth.user}@` : ''}${t.host}:${t.port}`
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
}

/** Where a failure happened: before any message was started, or at which command. */
export type Stage = 'connect' | 'mail' | 'rcpt' | 'data'

export type SendOutcome =
  | { ok: true; reply: SmtpReply; secure: boolean }
  | { ok: false; reply: SmtpReply; stage: Stage; message: string }

/** A connection that could not be opened (or authenticated); `outcome.stage` is 'connect'. */
export class ConnectError extends Error {
  constructor(readonly outcome: Extract<SendOutcome, { ok: false }>) {
    super(outcome.message)
  }
}

interface NodemailerLikeError extends Error { code?: string; response?: string; responseCode?: number; command?: string }

function stageOf(command: string | undefined, connected: boolean): Stage {
  if (!connected) return 'connect'
  // Refused by the client library before anything went out (for example a connection found closed).
  if (command === 'API') return 'connect'
  if (command?.startsWith('MAIL')) return 'mail'
  if (command?.startsWith('RCPT')) return 'rcpt'
  // DATA, or a connection lost mid-session: the message may have gone out.
  return 'data'
}

function failure(err: unknown, connected: boolean): Extract<SendOutcome, { ok: false }> {
  const e = err as NodemailerLikeError
  const reply = e.response ? parseReply(e.response) : { code: 0, enhanced: null, text: `${e.code ?? 'ERROR'}: ${e.message}` }
  if (!e.response && e.responseCode) reply.code = e.responseCode
  return { ok: false, reply, stage: stageOf(e.command, connected), message: e.message }
}

export class SmtpConn {
  messages = 0
  dead = false
  idleTimer: Timer | null = null

  private constructor(readonly target: SmtpTarget, private conn: SMTPConnection) {
    const die = () => { this.dead = true }
    conn.on('error', die)
    conn.on('end', die)
  }

  get secure(): boolean { return this.conn.secure }

  /** Connects (and authenticates); rejects with a ConnectError. */
  static open(target: SmtpTarget, opts: PoolOptions): Promise<SmtpConn> {
    // SNI takes a host name, never an address.
    const servername = target.servername && !isIP(target.servername) ? target.servername : undefined
    const conn = new SMTPConnection({
      host: target.host,
      port: target.port,
      secure: target.secure ?? false,
      servername,
      name: opts.name,
      opportunisticTLS: true,
      tls: { rejectUnauthorized: false, ...(servername ? { servername } : {}) },
      connectionTimeout: opts.connectTimeoutMs ?? 30_000,
      greetingTimeout: opts.greetingTimeoutMs ?? 30_000,
      socketTimeout: opts.socketTimeoutMs ?? 300_000,
      socketCloseTimeout: 0,
      logger: false,
    })
    const c = new SmtpConn(target, conn)
    return new Promise((resolve, reject) => {
      let done = false
      const fail = (err: unknown) => {
        if (done) return
        done = true
        c.close()
        reject(new ConnectError(failure(err, false)))
      }
      conn.once('error', fail)
      conn.connect((err) => {
        if (err) return fail(err)
        const ready = () => {
          if (done) return
          done = true
          conn.removeListener('error', fail)
          resolve(c)
        }
        if (!target.auth) return ready()
        conn.login({ user: target.auth.user, pass: target.auth.pass }, (authErr) => (authErr ? fail(authErr) : ready()))
      })
    })
  }

  send(from: string, to: string, raw: Buffer): Promise<SendOutcome> {
    if (this.dead) {
      return Promise.resolve({ ok: false, reply: { code: 0, enhanced: null, text: 'ECONNECTION: connection already closed' }, stage: 'connect', message: 'connection already closed' })
    }
    this.messages++
    return new Promise((resolve) => {
      this.conn.send({ from, to: [to], size: raw.length }, raw, (err: Error | null, info?: SMTPConnectionSendInfo) => {
        if (err) return resolve(failure(err, true))
        resolve({ ok: true, reply: parseReply(info?.response ?? '250 OK'), secure: this.conn.secure })
      })
    })
  }

  /** RSET after a refused message, so the session can carry the next one. */
  reset(): Promise<boolean> {
    return new Promise((resolve) => this.conn.reset((err) => resolve(!err)))
  }

  close(): void {
    this.dead = true
    if (this.idleTimer) clearTimeout(this.idleTimer)
    try { this.conn.quit() } catch { /* already gone */ }
    try { this.conn.close() } catch { /* already gone */ }
  }
}

/** Idle connections per target. A connection is in use by one message at a time. */
export class ConnectionPool {
  private idle = new Map<string, SmtpConn[]>()
  private open = new Set<SmtpConn>()
  constructor(readonly opts: PoolOptions) {}

  /** An idle connection to `target`, or a new one. Rejects with a ConnectError. */
  async acquire(target: SmtpTarget): Promise<{ conn: SmtpConn; reused: boolean }> {
    const list = this.idle.get(targetKey(target))
    while (list?.length) {
      const conn = list.pop()!
      if (conn.idleTimer) clearTimeout(conn.idleTimer)
      conn.idleTimer = null
      if (!conn.dead) return { conn, reused: true }
      this.open.delete(conn)
    }
    const conn = await SmtpConn.open(target, this.opts)
    this.open.add(conn)
    return { conn, reused: false }
  }

  /** Hands a connection back: kept for reuse when healthy, else closed. */
  async release(conn: SmtpConn, state: 'clean' | 'needs-reset' | 'close'): Promise<void> {
    if (state === 'needs-reset' && !conn.dead) {
      if (!(await conn.reset())) state = 'close'
    }
    if (state === 'close' || conn.dead || conn.messages >= (this.opts.maxMessages ?? 500)) {
      conn.close()
      this.open.delete(conn)
      return
    }
    const key = targetKey(conn.target)
    let list = this.idle.get(key)
    if (!list) this.idle.set(key, (list = []))
    list.push(conn)
    conn.idleTimer = setTimeout(() => {
      const i = list!.indexOf(conn)
      if (i >= 0) list!.splice(i, 1)
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

  closeAll(): void {
    for (const c of this.open) c.close()
    this.open.clear()
    this.idle.clear()
  }
}
