/**
 * The SMTP relay for applications (MAILCTL_SMTP_RELAY_PORT, 0 disables; with MAILCTL_SMTP_TLS_CERT/KEY
 * also implicit TLS on MAILCTL_SMTP_SECURE_PORT, 465 by default): authenticated submission into the same pipeline as POST /v1/send.
 *
 * - AUTH PLAIN or LOGIN with any user name and the project's secret key (sk_...) as the password; every
 *   command of a mail transaction needs it. With a certificate, AUTH is only offered after STARTTLS (or
 *   on the implicit-TLS port): EHLO in clear does not list it and AUTH in clear is answered
 *   `538 5.7.11` (RFC 4954); without one it is allowed in clear text (a loopback or private network).
 * - Failed logins count per client address (deps.limiter, shared across nodes with Redis): each failure
 *   answers a little later than the one before, and after AUTH_FAILURE_LIMIT failures in the window the
 *   address is refused outright (454 4.7.0) until the window ends, even with the right key.
 * - MAIL FROM, and the message's From header, must be on a verified domain of the project
 *   (assertSenderAllowed); recipients on the project's suppression list are refused at RCPT TO.
 * - At the end of DATA the message is parsed and each envelope recipient gets its contact upserted (new
 *   contacts unsubscribed, as with /v1/send) and an email queued (sourceType relay) in one transaction
 *   (relayMessage, src/modules/emails/relay.ts);
 *   250 comes only after that commit. Delivery then builds, DKIM-signs and tracks it like any other.
 *   The message is rebuilt by the pipeline: subject, HTML and text bodies, attachments (inline ones keep
 *   their Content-ID), Reply-To and non-structural headers (X-*, In-Reply-To, References,
 *   List-Unsubscribe...) are kept; the Message-ID and Date are mailctl's, and each recipient gets its
 *   own message addressed to it alone.
 */
import type { SMTPServer as SMTPServerType, SMTPServerOptions, SMTPServerSession } from 'smtp-server'
import { SMTPServer } from 'smtp-server'
import { ctxFor, type Ctx, type Deps } from '../deps'
import { LostRaceError } from '../db/group-commit'
import { AppError } from '../errors'
import { errorFields } from '../log'
import { isEmail, normalizeEmail } from '../modules/contacts/data'
import { relayMessage, type RelayResult } from '../modules/emails/relay'
import { assertSenderAllowed } from '../modules/domains/service'
import { projectForKey } from '../modules/projects/service'
import { suppressedAmong } from '../modules/suppressions/service'
import { MAX_MESSAGE_BYTES } from '../mail/outbound/deliver'
import { closeServer, listen, readMessage } from './receiver'
import { smtpReply, smtpTls } from './tls'

/** Failed logins allowed per client address and window before the address is refused outright. */
export const AUTH_FAILURE_LIMIT = 10
export const AUTH_FAILURE_WINDOW_MS = 15 * 60_000
const MAX_RECIPIENTS = 100

/** Who is logged in on a relay session. */
interface RelayUser { projectId: string }

function sessionProject(session: SMTPServerSession): string | null {
  const u = session.user as RelayUser | undefined
  return u && typeof u.projectId === 'string' ? u.projectId : null
}

export interface RelayServerOptions {
  /** Implicit TLS from the first byte (the 465 listener). */
  secure?: boolean
  /** Base of the growing delay after a failed login, in ms (default 250; doubles per failure, at most 5 s). */
  authFailureDelayMs?: number
}

/** The relay's smtp-server, not yet listening. */
export function createRelayServer(deps: Deps, opts: RelayServerOptions = {}): SMTPServerType {
  const { config, log, limiter } = deps
  const tls = smtpTls(config)
  if (opts.secure && !tls) throw new Error('implicit TLS needs MAILCTL_SMTP_TLS_CERT and MAILCTL_SMTP_TLS_KEY')
  const delayBase = opts.authFailureDelayMs ?? 250
  const ctxOf = (session: SMTPServerSession): Ctx | null => {
    const projectId = sessionProject(session)
    return projectId ? ctxFor(deps, projectId, { kind: 'key', keyKind: 'secret' }) : null
  }
  const options: SMTPServerOptions = {
    name: config.hostname,
    banner: 'mailctl relay',
    logger: false,
    secure: Boolean(opts.secure),
    size: MAX_MESSAGE_BYTES,
    maxRecipients: MAX_RECIPIENTS,
    hideENHANCEDSTATUSCODES: true,
    disableReverseLookup: true,
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: false,
    allowInsecureAuth: !tls,
    disabledCommands: tls ? [] : ['STARTTLS'],
    authRequiredMessage: tls && !opts.secure
      ? 'Authentication required: issue STARTTLS, then log in with AUTH PLAIN or LOGIN, any user name and the project secret key (sk_...) as the password'
      : 'Authentication required: log in with AUTH PLAIN or LOGIN, any user name and the project secret key (sk_...) as the password',
    ...(tls ? { key: tls.key, cert: tls.cert } : {}),
    onAuth(auth, session, cb) {
      const key = `smtp-relay-auth:${session.remoteAddress}`
      ;(async () => {
        const attempt = await limiter.hit(key, AUTH_FAILURE_LIMIT, AUTH_FAILURE_WINDOW_MS)
        if (!attempt.allowed) {
          log.warn('relay login refused: too many failures from this address', { remote: session.remoteAddress, retryAfterSeconds: attempt.resetSeconds })
          return cb(smtpReply(454, `4.7.0 Too many failed logins from your address, try again in ${attempt.resetSeconds} seconds`))
        }
        const found = auth.password ? await projectForKey(deps.store, auth.password.trim()) : null
        if (found && found.kind === 'secret' && !found.project.disabled) {
          await limiter.reset(key)
          log.info('relay login', { session: session.id, remote: session.remoteAddress, projectId: found.project.id })
          return cb(null, { user: { projectId: found.project.id } satisfies RelayUser })
        }
        // Attempts already counted include this one: the delay grows with each failure in the window.
        const failures = AUTH_FAILURE_LIMIT - attempt.remaining
        const reason = !found ? 'unknown key' : found.kind !== 'secret' ? 'public key' : 'project disabled'
        log.warn('relay login failed', { session: session.id, remote: session.remoteAddress, user: (auth.username ?? '').slice(0, 100), reason, failures })
        await Bun.sleep(Math.min(5000, delayBase * 2 ** Math.max(0, failures - 1)))
        const message = found?.project.disabled ? '5.7.8 This project is disabled' : found?.kind === 'public' ? '5.7.8 A public key cannot send: use the project secret key (sk_...) as the password' : '5.7.8 Authentication credentials invalid: use the project secret key (sk_...) as the password'
        cb(smtpReply(535, message))
      })().catch((err) => {
        log.error('relay login check failed', { session: session.id, ...errorFields(err) })
        cb(smtpReply(454, '4.7.0 Temporary authentication failure'))
      })
    },
    onMailFrom(address, session, cb) {
      const ctx = ctxOf(session)
      if (!ctx) return cb(smtpReply(530, '5.7.0 Authentication required'))
      const from = normalizeEmail(address.address)
      if (!isEmail(from)) return cb(smtpReply(553, '5.1.7 The sender address is not a valid email address'))
      assertSenderAllowed(ctx, from).then(() => cb(), (err) => {
        if (err instanceof AppError && err.status === 403) {
          log.info('relay sender refused', { session: session.id, projectId: ctx.projectId, from })
          return cb(smtpReply(553, `5.7.1 Sender address rejected: ${err.message}`))
        }
        log.error('relay sender check failed', { session: session.id, ...errorFields(err) })
        cb(smtpReply(451, '4.3.0 Temporary failure, try again later'))
      })
    },
    onRcptTo(address, session, cb) {
      const ctx = ctxOf(session)
      if (!ctx) return cb(smtpReply(530, '5.7.0 Authentication required'))
      const to = normalizeEmail(address.address)
      if (!isEmail(to)) return cb(smtpReply(553, '5.1.3 The recipient address is not a valid email address'))
      suppressedAmong(ctx, deps.store.db, [to]).then((s) => {
        const hit = s.get(to)
        if (hit) return cb(smtpReply(550, `5.7.1 Recipient address suppressed for this project (${hit.reason}); remove it from the suppression list to send again`))
        cb()
      }, (err) => {
        log.error('relay recipient check failed', { session: session.id, ...errorFields(err) })
        cb(smtpReply(451, '4.3.0 Temporary failure, try again later'))
      })
    },
    onData(stream, session, cb) {
      const ctx = ctxOf(session)
      readMessage(stream, MAX_MESSAGE_BYTES).then(async (raw) => {
        if (!ctx) return cb(smtpReply(530, '5.7.0 Authentication required'))
        if (stream.sizeExceeded) return cb(smtpReply(552, `5.3.4 Message exceeds the fixed maximum size of ${MAX_MESSAGE_BYTES} bytes`))
        const rcptTo = session.envelope.rcptTo.map((r) => r.address)
        const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : ''
        let result: RelayResult
        try {
          result = await relayMessage(ctx, { mailFrom, rcptTo, raw, sessionId: session.id })
        } catch (err) {
          // A write that lost to concurrent writers on every run (a contact deleted while it was written, a
          // deadlock; conflictAnswer): only for now, and logged, since it should be rare.
          if (err instanceof LostRaceError) {
            log.warn('write conflicted on every run', { session: session.id, projectId: ctx.projectId, ...errorFields(err.cause ?? err) })
            return cb(smtpReply(451, `4.3.0 ${err.message}`))
          }
          if (err instanceof AppError) {
            log.info('relay message refused', { session: session.id, projectId: ctx.projectId, reason: err.message })
            if (err.status === 403) return cb(smtpReply(550, `5.7.1 ${err.message}`))
            if (err.status === 413) return cb(smtpReply(552, `5.3.4 ${err.message}`))
            if (err.status < 500) return cb(smtpReply(550, `5.6.0 ${err.message}`))
          }
          log.error('relay message could not be queued', { session: session.id, projectId: ctx.projectId, ...errorFields(err) })
          return cb(smtpReply(451, '4.3.0 Temporary failure queueing the message, try again later'))
        }
        if (!result.emails.length) return cb(smtpReply(554, '5.7.1 No recipient can be sent to: every one is suppressed'))
        log.info('relay message queued', { session: session.id, projectId: ctx.projectId, emails: result.emails.map((e) => e.id), suppressed: result.suppressed.length, size: raw.length })
        cb(null, `2.0.0 Ok: queued as ${result.emails.map((e) => e.id).join(',')}`)
      }, (err) => {
        log.warn('relay DATA stream failed', { session: session.id, ...errorFields(err) })
        cb(smtpReply(451, '4.3.0 Temporary failure reading the message'))
      })
    },
  }
  // At shutdown, sessions get MAILCTL_SHUTDOWN_GRACE_SECONDS to finish their transaction, then a 421.
  const server = new SMTPServer({ ...options, closeTimeout: Math.max(1, deps.config.shutdownGraceSeconds * 1000) })
  server.on('error', (err) => log.warn('relay SMTP connection error', errorFields(err)))
  if (tls && !opts.secure) authOnlyAfterStartTls(server)
  return server
}

/** smtp-server's connection class (its package exports only the type of the set that holds them). */
type SMTPConnection = SMTPServerType['connections'] extends Set<infer C> ? C : never

/** RFC 4954 section 4: AUTH refused on a connection that must be encrypted first. */
export const AUTH_NEEDS_TLS_REPLY = '5.7.11 Encryption required for requested authentication mechanism'

/**
 * On the STARTTLS listener, AUTH belongs to the encrypted session only (RFC 3207, RFC 4954): the EHLO
 * reply in clear leaves AUTH out, and AUTH in clear is answered `538 5.7.11` instead of smtp-server's
 * non-standard `538 Error: Must issue a STARTTLS command first`. smtp-server (pinned) has no option for
 * either, so each connection's EHLO and AUTH handlers are wrapped as it is accepted: the EHLO reply is
 * built with AUTH disabled for that one call (session.disabledCommands, smtp-server's per-session
 * switch), and AUTH before TLS gets the RFC 4954 reply.
 */
function authOnlyAfterStartTls(server: SMTPServerType): void {
  const connect = server.connect.bind(server)
  server.connect = (socket, socketOptions) => {
    connect(socket, socketOptions)
    // The connection just accepted is the newest of the set (insertion order).
    let conn: SMTPConnection | undefined
    for (const c of server.connections) conn = c
    if (!conn) return
    const c = conn
    const ehlo = c.handler_EHLO.bind(c)
    const auth = c.handler_AUTH.bind(c)
    c.handler_EHLO = (command, callback) => {
      if (c.secure) return ehlo(command, callback)
      const before = c.session.disabledCommands
      c.session.disabledCommands = ['AUTH']
      try {
        ehlo(command, callback)
      } finally {
        c.session.disabledCommands = before
      }
    }
    c.handler_AUTH = (command, callback) => {
      if (c.secure) return auth(command, callback)
      c.send(538, AUTH_NEEDS_TLS_REPLY)
      callback()
    }
  }
}

export interface Relay {
  port: number
  /** The implicit-TLS port, when listening on one. */
  securePort: number | null
  close(): Promise<void>
}

export interface RelayListenOptions extends RelayServerOptions {
  /** Overrides MAILCTL_SMTP_RELAY_PORT; 0 here means any free port (tests). */
  port?: number
  /** Overrides MAILCTL_SMTP_SECURE_PORT (used when a certificate is configured); null for none. */
  securePort?: number | null
  host?: string
}

/**
 * Starts the relay on MAILCTL_SMTP_RELAY_PORT (null when it is 0) and, with a certificate, the
 * implicit-TLS listener (MAILCTL_SMTP_SECURE_PORT unless 0). A secure port that cannot be bound (no privilege) is logged as an error
 * and skipped; the submission port keeps working.
 */
export async function startRelay(deps: Deps, opts: RelayListenOptions = {}): Promise<Relay | null> {
  const port = opts.port ?? deps.config.smtpRelayPort
  if (opts.port === undefined && port === 0) return null
  const host = opts.host ?? '0.0.0.0'
  const tls = smtpTls(deps.config)
  const plain = createRelayServer(deps, opts)
  const bound = await listen(plain, port, host)
  let secure: SMTPServerType | null = null
  let securePort: number | null = null
  const wanted = opts.securePort === undefined ? (tls && deps.config.smtpSecurePort ? deps.config.smtpSecurePort : null) : opts.securePort
  if (tls && wanted !== null) {
    secure = createRelayServer(deps, { ...opts, secure: true })
    try {
      securePort = await listen(secure, wanted, host)
    } catch (err) {
      deps.log.error('smtp relay: the implicit-TLS port could not be opened; set MAILCTL_SMTP_SECURE_PORT to another port, or 0 to turn it off', { port: wanted, ...errorFields(err) })
      secure = null
    }
  }
  deps.log.info('smtp relay listening', { port: bound, securePort, starttls: Boolean(tls) })
  return {
    port: bound,
    securePort,
    async close() {
      await Promise.all([closeServer(plain), secure ? closeServer(secure) : Promise.resolve()])
    },
  }
}
