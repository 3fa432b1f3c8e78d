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
 *   contacts unsubscribed, as with /v1/send) and an email queued (sourceType relay) in one transaction;
 *   250 comes only after that commit. Delivery then builds, DKIM-signs and tracks it like any other.
 *   The message is rebuilt by the pipeline: subject, HTML and text bodies, attachments (inline ones keep
 *   their Content-ID), Reply-To and non-structural headers (X-*, In-Reply-To, References,
 *   List-Unsubscribe...) are kept; the Message-ID and Date are mailctl's, and each recipient gets its
 *   own message addressed to it alone.
 */
import type { SMTPServer as SMTPServerType, SMTPServerOptions, SMTPServerSession } from 'smtp-server'
import { SMTPServer } from 'smtp-server'
import type { StoredAttachment } from '../db/schema/sending'
import { ctxFor, type Ctx, type Deps } from '../deps'
import { AppError } from '../errors'
import { errorFields } from '../log'
import { isEmail, normalizeEmail } from '../modules/contacts/data'
import { upsertContact } from '../modules/contacts/service'
import { assertSenderAllowed } from '../modules/domains/service'
import { PRIORITY, queueEmails, type NewEmail } from '../modules/emails/service'
import { MAX_HEADER_VALUE } from '../modules/emails/model'
import { notifyEvents, type EventRow } from '../modules/events/stream'
import { projectForKey } from '../modules/projects/service'
import { suppressedAmong } from '../modules/suppressions/service'
import { STRUCTURAL_HEADERS } from '../mail/mime'
import { refusedHeader } from '../mail/header-policy'
import { notifyQueued } from '../mail/outbound'
import { MAX_MESSAGE_BYTES } from '../mail/outbound/deliver'
import { closeServer, listen, readMessage } from './receiver'
import { smtpReply, smtpTls } from './tls'

/** Failed logins allowed per client address and window before the address is refused outright. */
export const AUTH_FAILURE_LIMIT = 10
export const AUTH_FAILURE_WINDOW_MS = 15 * 60_000
const MAX_RECIPIENTS = 100

interface ParsedAddress { address?: string; name?: string }
interface ParsedMail {
  subject?: string
  from?: { value: ParsedAddress[] }
  to?: { value: ParsedAddress[] } | Array<{ value: ParsedAddress[] }>
  cc?: { value: ParsedAddress[] } | Array<{ value: ParsedAddress[] }>
  replyTo?: { value: ParsedAddress[] }
  html?: string | false
  text?: string
  headerLines?: Array<{ key: string; line: string }>
  attachments: Array<{ filename?: string; content: Buffer; contentType?: string; contentId?: string; cid?: string; contentDisposition?: string; related?: boolean; size?: number }>
}
// mailparser ships no type declarations: the shape used here is declared above.
const { simpleParser } = require('mailparser') as { simpleParser: (raw: Buffer, opts: { keepCidLinks: boolean; skipTextToHtml: boolean; skipImageLinks: boolean; maxHtmlLengthToParse?: number }) => Promise<ParsedMail> }

/** Who is logged in on a relay session. */
interface RelayUser { projectId: string }

function sessionProject(session: SMTPServerSession): string | null {
  const u = session.user as RelayUser | undefined
  return u && typeof u.projectId === 'string' ? u.projectId : null
}

/** Headers of the submitted message that are not carried over: structural ones and transport traces. */
const DROPPED_HEADERS: ReadonlySet<string> = new Set([
  ...STRUCTURAL_HEADERS, 'received', 'return-path', 'dkim-signature', 'x-google-dkim-signature', 'domainkey-signature',
  'arc-seal', 'arc-message-signature', 'arc-authentication-results', 'authentication-results', 'received-spf',
  'feedback-id', 'delivered-to', 'x-original-to', 'envelope-to', 'bcc', 'cc', 'x-mailctl-relay',
])

/** Headers only a client writes (never a relay on the way): refused, not dropped. */
const CLIENT_WRITTEN: ReadonlySet<string> = new Set(['feedback-id', 'authentication-results', 'arc-authentication-results', 'received-spf', 'x-mailctl-relay'])

/**
 * The non-structural headers of the submitted message, unfolded; invalid ones are dropped. A trust or
 * routing header the client wrote (Feedback-ID, Authentication-Results, Resent-*, ...: src/mail/header-policy.ts)
 * refuses the message with a 422 naming it; transport traces added on the way (Received, Return-Path,
 * signatures) are dropped.
 */
export function carriedHeaders(lines: Array<{ key: string; line: string }> | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const { key, line } of lines ?? []) {
    const name = line.slice(0, line.indexOf(':')).trim()
    const lower = key.toLowerCase()
    // Refused: what only a client writes, and any other trust or routing header that is not a trace.
    const why = name && (CLIENT_WRITTEN.has(lower) || !DROPPED_HEADERS.has(lower)) ? refusedHeader(name, 'TRANSACTIONAL') : null
    if (why) throw new AppError('VALIDATION_ERROR', `Header ${name} refused: ${why}`, { errors: [{ field: `headers.${name}`, message: why, code: 'reserved_header', received: name }] })
    if (!name || DROPPED_HEADERS.has(lower) || lower.startsWith('content-') || !/^[!-9;-~]{1,76}$/.test(name)) continue
    const value = line.slice(line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ').trim()
    if (!value || value.length > MAX_HEADER_VALUE || /[^\t\x20-\x7e\u00a0-\uffff]/.test(value)) continue
    if (!(name in out)) out[name] = value
  }
  return out
}

function addressList(v: ParsedMail['to']): ParsedAddress[] {
  if (!v) return []
  return (Array.isArray(v) ? v : [v]).flatMap((x) => x.value ?? [])
}

function attachmentsOf(parsed: ParsedMail): StoredAttachment[] {
  return parsed.attachments.map((a, i) => {
    const cid = a.cid ?? (a.contentId ? a.contentId.replace(/^<|>$/g, '') : undefined)
    const inline = Boolean(cid) && (a.related === true || a.contentDisposition === 'inline')
    return {
      filename: a.filename ?? `attachment-${i + 1}`,
      content: a.content.toString('base64'),
      contentType: a.contentType ?? 'application/octet-stream',
      disposition: inline ? 'inline' : 'attachment',
      size: a.content.length,
      ...(cid && inline ? { contentId: cid } : {}),
    } satisfies StoredAttachment
  })
}

export interface RelayedMessage {
  mailFrom: string
  rcptTo: string[]
  raw: Buffer
  sessionId?: string | null
}

export interface RelayResult {
  emails: Array<{ id: string; to: string; contactId: string }>
  suppressed: Array<{ to: string; reason: string }>
}

/**
 * Queues a message submitted over SMTP for each recipient, in one transaction (the verb behind the relay;
 * usable by anything that holds a raw message for a project). Throws AppError: 403 for a sender domain
 * not verified for the project, 422 for an unreadable message.
 */
export async function relayMessage(ctx: Ctx, m: RelayedMessage): Promise<RelayResult> {
  let parsed: ParsedMail
  try {
    parsed = await simpleParser(m.raw, { keepCidLinks: true, skipTextToHtml: true, skipImageLinks: true })
  } catch (err) {
    throw new AppError('VALIDATION_ERROR', `The message could not be parsed: ${err instanceof Error ? err.message : String(err)}`)
  }
  const headerFrom = parsed.from?.value?.find((a) => a.address)
  const fromEmail = normalizeEmail(headerFrom?.address ?? m.mailFrom)
  if (!isEmail(fromEmail)) throw new AppError('VALIDATION_ERROR', 'The message has no usable From address')
  // The envelope sender was checked at MAIL FROM; the From header decides the DKIM domain, so it is checked too.
  const sender = await assertSenderAllowed(ctx, fromEmail)
  const named = new Map(addressList(parsed.to).concat(addressList(parsed.cc)).filter((a): a is ParsedAddress & { address: string } => !!a.address).map((a) => [normalizeEmail(a.address), a.name || null]))
  const recipients = [...new Set(m.rcptTo.map(normalizeEmail))]
  const replyTo = parsed.replyTo?.value?.find((a) => a.address)?.address ?? null
  const headers = carriedHeaders(parsed.headerLines)
  const attachments = attachmentsOf(parsed)
  const html = typeof parsed.html === 'string' && parsed.html ? parsed.html : null
  const text = parsed.text ?? (html ? null : '')
  const subject = (parsed.subject ?? '').replace(/[\r\n]+/g, ' ').slice(0, 998)

  const out = await ctx.store.tx(async (db) => {
    const blocked = await suppressedAmong(ctx, db, recipients)
    const items: NewEmail[] = []
    const events: EventRow[] = []
    const result: RelayResult = { emails: [], suppressed: [] }
    for (const to of recipients) {
      const s = blocked.get(to)
      if (s) { result.suppressed.push({ to, reason: s.reason }); continue }
      const up = await upsertContact(ctx, { email: to }, { defaultSubscribed: false, db })
      events.push(...up.events)
      const id = Bun.randomUUIDv7()
      items.push({
        id, contactId: up.contact.id, to: { email: to, name: named.get(to) ?? null }, from: { email: fromEmail, name: headerFrom?.name || null },
        replyTo, subject, html, text, headers, attachments, type: 'TRANSACTIONAL', sourceType: 'relay', sourceId: m.sessionId ?? null,
        domainId: sender.domainId, listUnsubscribe: false, priority: PRIORITY.transactional,
      })
      result.emails.push({ id, to, contactId: up.contact.id })
    }
    await queueEmails(ctx, db, items)
    return { result, events }
  })
  if (out.result.emails.length) notifyQueued(ctx.deps)
  await notifyEvents(ctx, out.events)
  return out.result
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
