/**
 * Real SMTP sinks (smtp-server on 127.0.0.1) with scriptable replies, for tests and benchmarks.
 *
 *   const sink = await startSink({ script: tempFailThenAccept(2) })
 *   ... deliver to 127.0.0.1:sink.port ...
 *   await sink.waitFor((s) => s.received.length === 1)
 *
 * A script decides the reply at each stage ('connect', 'rcpt', 'data'); returning null accepts. Replies
 * are sent exactly as written (enhanced status codes are not added by the server). Run this file directly
 * (`bun test/helpers/smtp.ts`) to start an accepting sink in its own process; it prints its port.
 */
import { SMTPServer, type SMTPServerSession } from 'smtp-server'

export interface SinkMessage {
  /** Envelope sender (MAIL FROM). */
  from: string
  /** Envelope recipients (RCPT TO). */
  to: string[]
  raw: Buffer
  /** The Message-ID header, with angle brackets ('' when absent). */
  messageId: string
  /** True when the session had been upgraded with STARTTLS (or was TLS from the start). */
  secure: boolean
  /** The name the client gave in EHLO/HELO. */
  clientHostname: string
  /** The user authenticated on the session, if any. */
  user: string | null
  session: string
}

export interface AttemptRecord { stage: 'connect' | 'rcpt' | 'data'; key: string; reply: string }

export interface ScriptContext {
  stage: 'connect' | 'rcpt' | 'data'
  /** Message-ID at the data stage, the recipient at rcpt, the session id at connect. */
  key: string
  /** How many times this key was seen at this stage before (0 for the first time). */
  seen: number
  /** Sessions open now, this one included. */
  openSessions: number
  /** Recipients accepted so far in this transaction (the one being checked at rcpt; all at data). */
  rcpt: string[]
  raw?: Buffer
}

/** Returns an SMTP reply line ('451 4.7.1 Try later') to refuse, or null to accept. */
export type Script = (ctx: ScriptContext) => string | null

export interface SinkOptions {
  script?: Script
  /** Milliseconds to wait before answering the end of DATA (a slow receiver). */
  delayMs?: number
  /** Require AUTH (PLAIN/LOGIN) with these credentials (a smart host). */
  auth?: { user: string; pass: string }
  /** Hide STARTTLS from EHLO (default: offered, with smtp-server's built-in self-signed certificate). */
  noTls?: boolean
  /** Offer STARTTLS but speak only TLS 1.0, which the client refuses: every STARTTLS handshake fails. */
  tls10Only?: boolean
  /** The STARTTLS certificate (PEM), instead of smtp-server's built-in self-signed one. */
  tlsCert?: { key: string; cert: string }
  port?: number
  /** Loopback address to listen on (default 127.0.0.1); several sinks can share a port on 127.0.0.x. */
  host?: string
  /**
   * A stalled receiver: MAIL FROM is accepted and RCPT TO is never answered (counted in `stalled`).
   * `close()` then ends its sessions at once (421) instead of after smtp-server's 30-second grace.
   */
  stallRcpt?: boolean
}

export interface Sink {
  port: number
  received: SinkMessage[]
  /** Messages accepted so far (keeps counting if `received` is trimmed). */
  accepted: number
  attempts: AttemptRecord[]
  /** RCPT TO commands left unanswered (stallRcpt). */
  stalled: number
  /** Sessions open right now, and the most ever open at once. */
  openSessions: number
  maxOpenSessions: number
  /** Replaces the script (for tests that change a host's mood). */
  setScript(script: Script): void
  setDelay(ms: number): void
  /** Resolves when `cond` holds (checked on every event and every 20 ms); rejects after `timeoutMs`. */
  waitFor(cond: (s: Sink) => boolean, timeoutMs?: number): Promise<void>
  /** Messages received for a Message-ID. */
  byMessageId(id: string): SinkMessage[]
  close(): Promise<void>
}

export const accept: Script = () => null

/** Every message is refused `times` times at the end of DATA with `reply`, then accepted. */
export function tempFailThenAccept(times: number, reply = '451 4.7.1 Greylisted, please try again in 1 seconds'): Script {
  return (c) => (c.stage === 'data' && c.seen < times ? reply : null)
}

/** Every recipient is refused at RCPT TO with `reply`. */
export function rejectRecipients(reply = '550 5.1.1 <user> No such user here'): Script {
  return (c) => (c.stage === 'rcpt' ? reply : null)
}

/** Routes by recipient domain: the first script whose domain matches decides; others accept. */
export function byDomain(scripts: Record<string, Script>): Script {
  return (c) => {
    const domains = c.rcpt.map((r) => r.slice(r.lastIndexOf('@') + 1))
    for (const [domain, script] of Object.entries(scripts)) if (domains.includes(domain)) return script(c)
    return null
  }
}

/** Refuses sessions beyond `max` open at once with a 421 greeting. */
export function tooManyConnections(max: number, reply = '421 4.7.0 Too many concurrent connections, try again later'): Script {
  return (c) => (c.stage === 'connect' && c.openSessions > max ? reply : null)
}

function smtpError(reply: string): Error & { responseCode: number } {
  const m = /^(\d{3})[ -]?(.*)$/.exec(reply)
  const err = new Error(m ? m[2] : reply) as Error & { responseCode: number }
  err.responseCode = m ? Number(m[1]) : 451
  return err
}

export async function startSink(opts: SinkOptions = {}): Promise<Sink> {
  let script: Script = opts.script ?? accept
  let delayMs = opts.delayMs ?? 0
  const seen = new Map<string, number>()
  const open = new Set<string>()
  const waiters = new Set<() => void>()
  const notify = () => { for (const w of [...waiters]) w() }
  const count = (stage: string, key: string) => {
    const k = `${stage}\0${key}`
    const n = seen.get(k) ?? 0
    seen.set(k, n + 1)
    return n
  }
  const decide = (ctx: ScriptContext): string | null => {
    const reply = script(ctx)
    if (reply) sink.attempts.push({ stage: ctx.stage, key: ctx.key, reply })
    return reply
  }
  const sessionUser = (s: SMTPServerSession) => {
    const u = s.user as unknown
    return typeof u === 'string' ? u : u && typeof u === 'object' && 'username' in u ? String((u as { username: unknown }).username) : null
  }

  const server = new SMTPServer({
    logger: false,
    hideENHANCEDSTATUSCODES: true,
    hideSTARTTLS: opts.noTls ?? false,
    ...(opts.tls10Only ? { minVersion: 'TLSv1', maxVersion: 'TLSv1' } : {}),
    ...(opts.tlsCert ? { key: opts.tlsCert.key, cert: opts.tlsCert.cert } : {}),
    authOptional: !opts.auth,
    ...(opts.auth ? { authMethods: ['PLAIN', 'LOGIN'], allowInsecureAuth: true } : { disabledCommands: ['AUTH'] }),
    size: 60 * 1024 * 1024,
    ...(opts.stallRcpt ? { closeTimeout: 1 } : {}),
    onConnect(session, cb) {
      open.add(session.id)
      sink.openSessions = open.size
      sink.maxOpenSessions = Math.max(sink.maxOpenSessions, sink.openSessions)
      const reply = decide({ stage: 'connect', key: session.id, seen: 0, openSessions: sink.openSessions, rcpt: [] })
      cb(reply ? smtpError(reply) : null)
    },
    onClose(session) {
      // Counted by id: smtp-server may report a close for a connection it never reported as open.
      open.delete(session.id)
      sink.openSessions = open.size
      notify()
    },
    onAuth(auth, _session, cb) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) return cb(null, { user: auth.username })
      cb(smtpError('535 5.7.8 Authentication credentials invalid'))
    },
    onRcptTo(address, _session, cb) {
      if (opts.stallRcpt) {
        sink.stalled++
        notify()
        return
      }
      const key = address.address.toLowerCase()
      const reply = decide({ stage: 'rcpt', key, seen: count('rcpt', key), openSessions: sink.openSessions, rcpt: [key] })
      cb(reply ? smtpError(reply) : null)
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', async () => {
        const raw = Buffer.concat(chunks)
        const head = raw.subarray(0, Math.max(0, raw.indexOf('\r\n\r\n'))).toString('latin1')
        const messageId = /^Message-ID:\s*(<[^>\r\n]+>)/im.exec(head)?.[1] ?? ''
        if (delayMs) await Bun.sleep(delayMs)
        const rcpt = session.envelope.rcptTo.map((r) => r.address.toLowerCase())
        const reply = decide({ stage: 'data', key: messageId, seen: count('data', messageId), openSessions: sink.openSessions, rcpt, raw })
        if (!reply) {
          sink.accepted++
          sink.received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            raw,
            messageId,
            secure: session.secure,
            clientHostname: session.hostNameAppearsAs ?? '',
            user: sessionUser(session),
            session: session.id,
          })
        }
        cb(reply ? smtpError(reply) : null)
        notify()
      })
    },
  })
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject)
    const srv = server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      const addr = srv.address()
      if (addr && typeof addr === 'object') resolve(addr.port)
      else reject(new Error('sink did not bind'))
    })
  })
  server.on('error', () => { /* client resets are normal in tests */ })

  const sink: Sink = {
    port,
    received: [],
    accepted: 0,
    attempts: [],
    stalled: 0,
    openSessions: 0,
    maxOpenSessions: 0,
    setScript(s) { script = s; seen.clear() },
    setDelay(ms) { delayMs = ms },
    waitFor(cond, timeoutMs = 20_000) {
      if (cond(sink)) return Promise.resolve()
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!cond(sink)) return
          cleanup()
          resolve()
        }
        const timer = setInterval(check, 20)
        const deadline = setTimeout(() => {
          cleanup()
          reject(new Error(`sink: condition not met within ${timeoutMs} ms (received ${sink.received.length}, attempts ${sink.attempts.length})`))
        }, timeoutMs)
        const cleanup = () => { clearInterval(timer); clearTimeout(deadline); waiters.delete(check) }
        waiters.add(check)
      })
    },
    byMessageId(id) { return sink.received.filter((m) => m.messageId === id) },
    close() {
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  return sink
}

if (import.meta.main) {
  const port = Number(process.env.SINK_PORT ?? 0)
  const sink = await startSink({ port, noTls: process.env.SINK_TLS !== '1' })
  let last = 0
  process.stdout.write(`${JSON.stringify({ port: sink.port })}\n`)
  setInterval(() => {
    if (sink.accepted !== last) {
      last = sink.accepted
      process.stdout.write(`${JSON.stringify({ received: last })}\n`)
    }
    // Keep memory flat in long benchmarks: only the count matters there.
    if (sink.received.length > 10_000) sink.received.splice(0, sink.received.length - 10_000)
  }, 50)
}
