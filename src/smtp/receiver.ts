/**
 * The inbound SMTP receiver (MAILCTL_SMTP_INBOUND_PORT; 0 disables): the MX of the bounce subdomains
 * and of the verified domains. It refuses at RCPT TO every address it does not serve
 * (src/modules/inbound/routing.ts: no open relay), and answers 250 to a message only once the raw message
 * and the job that will process it are committed together (storeInbound): a crash after the 250 loses
 * nothing, a crash before it makes the sender retry. Processing (bounces, complaints, email.received)
 * happens in the `inbound.process` job (src/modules/inbound/), so a message the parsers choke on is
 * stored and logged, never a crash of the listener.
 */
import type { Server } from 'node:net'
import { SMTPServer, type SMTPServerDataStream, type SMTPServerOptions } from 'smtp-server'
import type { Deps } from '../deps'
import { errorFields } from '../log'
import { routeRecipient, storeInbound, type Route } from '../modules/inbound/service'
import { smtpReply, smtpTls } from './tls'
/** The largest message the receiver takes (bounces and reports are small; replies may carry files). */
export const MAX_INBOUND_BYTES = 25 * 1024 * 1024
const MAX_RECIPIENTS = 100

export interface SmtpListener {
  port: number
  server: SMTPServer
  close(): Promise<void>
}

export interface ListenOptions {
  /** Overrides the configured port; 0 here means any free port (tests). */
  port?: number
  host?: string
}

/** Listens and resolves with the bound port. */
export function listen(server: SMTPServer, port: number, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const onError = (err: Error) => reject(err)
    server.once('error', onError)
    const srv: Server = server.listen(port, host, () => {
      server.off('error', onError)
      const addr = srv.address()
      if (addr && typeof addr === 'object') resolve(addr.port)
      else reject(new Error('the SMTP server did not bind'))
    })
  })
}

export function closeServer(server: SMTPServer): Promise<void> {
  return new Promise<void>((resolve) => server.close(() => resolve()))
}

/** Reads a DATA stream into one buffer, keeping at most `max` bytes (smtp-server flags the excess). */
export function readMessage(stream: SMTPServerDataStream, max: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    stream.on('data', (c: Buffer) => {
      size += c.length
      if (size <= max) chunks.push(c)
    })
    stream.on('error', reject)
    stream.on('end', () => resolve(Buffer.concat(chunks)))
  })
}

/** The receiver's smtp-server, not yet listening. */
export function createInboundServer(deps: Deps): SMTPServer {
  const { config, log } = deps
  const tls = smtpTls(config)
  /** Accepted recipients of each open session, by address (the project of each). */
  const routes = new Map<string, Map<string, Route>>()
  const options: SMTPServerOptions = {
    name: config.hostname,
    banner: 'mailctl inbound',
    logger: false,
    size: MAX_INBOUND_BYTES,
    maxRecipients: MAX_RECIPIENTS,
    hideENHANCEDSTATUSCODES: true,
    disableReverseLookup: true,
    authOptional: true,
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(tls ? { key: tls.key, cert: tls.cert } : {}),
    onConnect(session, cb) {
      routes.set(session.id, new Map())
      cb()
    },
    onClose(session) {
      routes.delete(session.id)
    },
    onMailFrom(_address, session, cb) {
      routes.set(session.id, new Map())
      cb()
    },
    onRcptTo(address, session, cb) {
      routeRecipient(deps, address.address).then((route) => {
        if (!route.accept) {
          log.info('inbound recipient refused', { session: session.id, remote: session.remoteAddress, rcpt: address.address.slice(0, 320), reply: `${route.code} ${route.message}` })
          return cb(smtpReply(route.code, route.message))
        }
        routes.get(session.id)?.set(address.address.toLowerCase(), route)
        cb()
      }, (err) => {
        log.error('inbound recipient check failed', { session: session.id, ...errorFields(err) })
        cb(smtpReply(451, '4.3.0 Temporary failure, try again later'))
      })
    },
    onData(stream, session, cb) {
      readMessage(stream, MAX_INBOUND_BYTES).then(async (body) => {
        if (stream.sizeExceeded) return cb(smtpReply(552, `5.3.4 Message exceeds the fixed maximum size of ${MAX_INBOUND_BYTES} bytes`))
        const rcptTo = session.envelope.rcptTo.map((r) => r.address.toLowerCase())
        const accepted = routes.get(session.id) ?? new Map<string, Route>()
        const projects = new Set(rcptTo.map((r) => { const x = accepted.get(r); return x?.accept ? x.projectId : null }))
        const projectId = projects.size === 1 ? [...projects][0] : null
        const id = Bun.randomUUIDv7()
        const at = deps.clock.date()
        // Stored exactly as received: the trace (client address, EHLO name, time) is in its own columns.
        const raw = body
        try {
          await storeInbound(deps, {
            id, at, raw, rcptTo, projectId, mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            remoteAddress: session.remoteAddress ?? null, helo: session.hostNameAppearsAs || null,
          })
        } catch (err) {
          log.error('inbound message could not be stored', { session: session.id, size: raw.length, ...errorFields(err) })
          return cb(smtpReply(451, '4.3.0 Temporary failure storing the message, try again later'))
        }
        log.info('inbound message stored', { inboundId: id, session: session.id, remote: session.remoteAddress, from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', rcpt: rcptTo, size: raw.length, projectId })
        cb(null, `2.0.0 Ok: queued as ${id}`)
      }, (err) => {
        log.warn('inbound DATA stream failed', { session: session.id, ...errorFields(err) })
        cb(smtpReply(451, '4.3.0 Temporary failure reading the message'))
      })
    },
  }
  // At shutdown, sessions get MAILCTL_SHUTDOWN_GRACE_SECONDS to finish their transaction, then a 421.
  const server = new SMTPServer({ ...options, closeTimeout: Math.max(1, deps.config.shutdownGraceSeconds * 1000) })
  server.on('error', (err) => log.warn('inbound SMTP connection error', errorFields(err)))
  return server
}

/** Starts the receiver on MAILCTL_SMTP_INBOUND_PORT (null when it is 0). */
export async function startInbound(deps: Deps, opts: ListenOptions = {}): Promise<SmtpListener | null> {
  const port = opts.port ?? deps.config.smtpInboundPort
  if (opts.port === undefined && port === 0) return null
  const server = createInboundServer(deps)
  const bound = await listen(server, port, opts.host ?? '0.0.0.0')
  deps.log.info('smtp inbound listening', { port: bound, tls: Boolean(deps.config.smtpTlsCert) })
  return { port: bound, server, close: () => closeServer(server) }
}
