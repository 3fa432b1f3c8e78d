/**
 * A minimal SMTP client session (RFC 5321) for the outbound pool: greeting, EHLO (HELO fallback),
 * opportunistic STARTTLS (RFC 3207) or implicit TLS, AUTH PLAIN/LOGIN (RFC 4954), and message
 * transactions with PIPELINING (RFC 2920: MAIL, RCPT and DATA in one write when offered), SIZE and
 * SMTPUTF8. Replaces nodemailer's SMTPConnection on the hot path: its stream plumbing and five socket
 * writes per message cost about three times this client's two.
 *
 * Failures are `SmtpClientError`s shaped like nodemailer's (code, response, command), so the pool maps
 * them to stages exactly as before: a reply to MAIL or RCPT is refused at that stage; anything after
 * DATA, or a connection lost mid-transaction (command "CONN"), may have delivered the message.
 */
import { connect as netConnect, type Socket } from 'node:net'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import { dataContent } from './data-content'

export class SmtpClientError extends Error {
  constructor(message: string, readonly code: string, readonly response: string | undefined, readonly command: string) {
    super(message)
  }

  get responseCode(): number | undefined {
    const m = this.response ? /^(\d{3})/.exec(this.response) : null
    return m ? Number(m[1]) : undefined
  }
}

/**
 * Whether a session failed in STARTTLS without a reply: the TLS handshake failed (a TLS 1.0-only server,
 * no shared cipher) or the server went silent. Opportunistic TLS then goes on in clear (pool.ts).
 */
export function isTlsHandshakeFailure(err: unknown): err is SmtpClientError {
  return err instanceof SmtpClientError && err.command === 'STARTTLS' && err.response === undefined
}

export interface SmtpClientOptions {
  host: string
  port: number
  /** Implicit TLS from the first byte. */
  secure: boolean
  /** TLS SNI (a host name, never an address). */
  servername?: string
  /** EHLO name. */
  name: string
  auth?: { user: string; pass: string }
  /** Use STARTTLS when offered (default true); false after a failed handshake with this server (pool.ts). */
  startTls?: boolean
  /**
   * A policy demands TLS (MTA-STS enforce): STARTTLS must be offered and succeed with a certificate valid
   * for `servername` (the system's CAs plus `ca`), else the session fails; never clear.
   */
  requireTls?: { ca?: string[] }
  /** CAs the certificate of an opportunistic session is checked against, without refusing it (TLS reporting); default the system's. */
  checkCa?: string[]
  connectionTimeout: number
  greetingTimeout: number
  /** Inactivity timeout of the socket. */
  socketTimeout: number
}

/** Replies longer than this end the session (a misbehaving server). */
const MAX_REPLY_BYTES = 1024 * 1024

interface Waiter { resolve(reply: string): void; reject(err: SmtpClientError): void }

const ascii = (s: string) => !/[\u0080-\uffff]/.test(s)

export class SmtpClient {
  /** Upgraded by STARTTLS or implicit TLS. */
  secure = false
  /** Why a session offered STARTTLS stayed in clear (a refused STARTTLS); set by the pool after a failed handshake. */
  clearReason: string | null = null
  /** Over TLS: why its certificate is not valid for the server's name (an error code), null when it is. */
  certError: string | null = null
  /** The session is unusable (closed, failed or timed out). */
  dead = false
  private socket!: Socket | TLSSocket
  private buf = ''
  private lines: string[] = []
  private waiters: Waiter[] = []
  /** Replies that arrived before anyone waited for them (in order). */
  private unclaimed: string[] = []
  private extensions = new Set<string>()
  private authMethods: string[] = []
  private fatal: SmtpClientError | null = null
  /** What the session is doing, for errors that are not replies (timeouts, a lost connection). */
  private phase = 'CONN'
  private readonly onData = (chunk: Buffer) => this.receive(chunk)
  private readonly onError = (err: Error & { code?: string }) => this.fail(new SmtpClientError(err.message, err.code ?? 'ECONNECTION', undefined, this.phase))
  private readonly onClose = () => this.fail(new SmtpClientError('Connection closed unexpectedly', 'ECONNECTION', undefined, this.phase))
  private readonly onTimeout = () => {
    this.fail(new SmtpClientError('Timeout', 'ETIMEDOUT', undefined, this.phase))
    this.socket.destroy()
  }

  private constructor(private readonly opts: SmtpClientOptions) {}

  /** Connects, reads the greeting, says EHLO, upgrades to TLS when offered and authenticates. */
  static async open(opts: SmtpClientOptions): Promise<SmtpClient> {
    const c = new SmtpClient(opts)
    try {
      await c.start()
      return c
    } catch (err) {
      c.close()
      throw err
    }
  }

  private async start(): Promise<void> {
    const { opts } = this
    const tls = { rejectUnauthorized: false, ...(opts.servername ? { servername: opts.servername } : {}) }
    await new Promise<void>((resolve, reject) => {
      const socket = opts.secure
        ? tlsConnect({ host: opts.host, port: opts.port, ...tls })
        : netConnect({ host: opts.host, port: opts.port })
      const timer = setTimeout(() => {
        socket.destroy()
        reject(new SmtpClientError('Connection timeout', 'ETIMEDOUT', undefined, 'CONN'))
      }, opts.connectionTimeout)
      const failed = (err: Error & { code?: string }) => {
        clearTimeout(timer)
        reject(new SmtpClientError(err.message, err.code ?? 'ECONNECTION', undefined, 'CONN'))
      }
      socket.once('error', failed)
      socket.once(opts.secure ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer)
        socket.removeListener('error', failed)
        resolve()
      })
      this.attach(socket)
    })
    this.secure = opts.secure
    const greeting = await this.reply(opts.greetingTimeout)
    if (!greeting.startsWith('220')) throw new SmtpClientError(`Invalid greeting. response=${greeting}`, 'EPROTOCOL', greeting, 'CONN')
    await this.hello()
    if (opts.requireTls && !this.secure && !this.extensions.has('STARTTLS')) {
      throw new SmtpClientError('TLS required by the domain\'s MTA-STS policy, but the server does not offer STARTTLS', 'ETLSREQUIRED', undefined, 'TLSPOLICY')
    }
    if (!this.secure && this.extensions.has('STARTTLS') && opts.startTls !== false) {
      this.phase = 'STARTTLS'
      const r = await this.command('STARTTLS')
      // Opportunistic: a refusal continues in clear. A failed handshake ends the session (isTlsHandshakeFailure).
      if (r.startsWith('2')) {
        await this.upgrade()
        await this.hello()
      } else {
        this.clearReason = `STARTTLS refused: ${r.split('\n')[0].slice(0, 200)}`
        if (opts.requireTls) throw new SmtpClientError(`TLS required by the domain's MTA-STS policy, but STARTTLS was refused: ${r}`, 'ETLSREQUIRED', r, 'TLSPOLICY')
      }
    }
    if (opts.auth) await this.login(opts.auth)
    this.phase = 'CONN'
  }

  private attach(socket: Socket | TLSSocket): void {
    this.socket = socket
    socket.setNoDelay?.(true)
    socket.setTimeout(this.opts.socketTimeout)
    socket.on('data', this.onData)
    socket.on('error', this.onError)
    socket.on('close', this.onClose)
    socket.on('end', this.onClose)
    socket.on('timeout', this.onTimeout)
  }

  private detach(): Socket | TLSSocket {
    const s = this.socket
    s.removeListener('data', this.onData)
    s.removeListener('error', this.onError)
    s.removeListener('close', this.onClose)
    s.removeListener('end', this.onClose)
    s.removeListener('timeout', this.onTimeout)
    s.setTimeout(0)
    return s
  }

  private async upgrade(): Promise<void> {
    const plain = this.detach()
    const { opts } = this
    await new Promise<void>((resolve, reject) => {
      // Opportunistic TLS checks no certificate; a policy's (requireTls) is checked against the MX host's name.
      const verify = opts.requireTls
        ? { rejectUnauthorized: true, ...(opts.requireTls.ca?.length ? { ca: opts.requireTls.ca } : {}) }
        : { rejectUnauthorized: false, ...(opts.checkCa?.length ? { ca: opts.checkCa } : {}) }
      const secure = tlsConnect({ socket: plain, ...verify, ...(opts.servername ? { servername: opts.servername } : {}) })
      const failed = (err: Error & { code?: string }) => {
        secure.removeListener('close', closed)
        reject(new SmtpClientError(`TLS handshake failed: ${err.code ? `${err.code} ` : ''}${err.message}`, 'ETLS', undefined, 'STARTTLS'))
      }
      // A server that drops the connection (or times out, onTimeout) during the handshake emits no error.
      const closed = () => failed(new Error('the connection closed during the TLS handshake'))
      secure.once('error', failed)
      secure.once('close', closed)
      secure.once('secureConnect', () => {
        secure.removeListener('error', failed)
        secure.removeListener('close', closed)
        this.certError = secure.authorized ? null : String(secure.authorizationError ?? 'UNVERIFIED')
        resolve()
      })
      this.attach(secure)
    })
    this.secure = true
  }

  private async hello(): Promise<void> {
    this.phase = 'EHLO'
    let r = await this.command(`EHLO ${this.opts.name}`)
    if (!r.startsWith('2')) {
      this.phase = 'HELO'
      r = await this.command(`HELO ${this.opts.name}`)
      if (!r.startsWith('2')) throw new SmtpClientError(`Invalid response for EHLO/HELO: ${r}`, 'EPROTOCOL', r, 'HELO')
      this.extensions = new Set()
      this.authMethods = []
      return
    }
    const ext = new Set<string>()
    let auth: string[] = []
    for (const line of r.split('\n').slice(1)) {
      const words = line.slice(4).trim().toUpperCase().split(/\s+/)
      const key = words[0].replace(/=.*$/, '')
      if (!key) continue
      ext.add(key)
      if (key === 'AUTH') auth = words.slice(1).concat(words[0].includes('=') ? words[0].split('=')[1].split(/\s+/) : [])
    }
    this.extensions = ext
    this.authMethods = auth
  }

  private async login(auth: { user: string; pass: string }): Promise<void> {
    const method = this.authMethods.includes('PLAIN') ? 'PLAIN' : this.authMethods.includes('LOGIN') ? 'LOGIN' : 'PLAIN'
    this.phase = `AUTH ${method}`
    let r: string
    if (method === 'PLAIN') {
      r = await this.command(`AUTH PLAIN ${Buffer.from(`\u0000${auth.user}\u0000${auth.pass}`, 'utf8').toString('base64')}`)
    } else {
      r = await this.command('AUTH LOGIN')
      if (r.startsWith('334')) r = await this.command(Buffer.from(auth.user, 'utf8').toString('base64'))
      if (r.startsWith('334')) r = await this.command(Buffer.from(auth.pass, 'utf8').toString('base64'))
    }
    if (!r.startsWith('235')) throw new SmtpClientError(`Invalid login: ${r}`, 'EAUTH', r, this.phase)
  }

  private receive(chunk: Buffer): void {
    this.buf += chunk.toString('utf8')
    if (this.buf.length > MAX_REPLY_BYTES) {
      this.fail(new SmtpClientError('Reply too long', 'EPROTOCOL', undefined, this.phase))
      this.socket.destroy()
      return
    }
    for (let nl = this.buf.indexOf('\n'); nl >= 0; nl = this.buf.indexOf('\n')) {
      const line = this.buf.slice(0, nl).replace(/\r$/, '')
      this.buf = this.buf.slice(nl + 1)
      this.lines.push(line)
      // "250-..." continues a reply; "250 ..." or "250" ends it.
      if (line.length > 3 && line[3] === '-') continue
      const reply = this.lines.join('\n')
      this.lines = []
      const w = this.waiters.shift()
      if (w) w.resolve(reply)
      else this.unclaimed.push(reply)
    }
  }

  private fail(err: SmtpClientError): void {
    if (this.dead) return
    this.dead = true
    this.fatal = err
    for (const w of this.waiters.splice(0)) w.reject(err)
  }

  /** The next reply; with `timeout`, a limit on waiting for it (the greeting). */
  private reply(timeout?: number): Promise<string> {
    const early = this.unclaimed.shift()
    if (early !== undefined) return Promise.resolve(early)
    if (this.fatal) return Promise.reject(this.fatal)
    return new Promise<string>((resolve, reject) => {
      if (!timeout) { this.waiters.push({ resolve, reject }); return }
      const timer = setTimeout(() => {
        this.fail(new SmtpClientError('Greeting never received', 'ETIMEDOUT', undefined, this.phase))
        this.socket.destroy()
      }, timeout)
      this.waiters.push({ resolve: (r) => { clearTimeout(timer); resolve(r) }, reject: (e) => { clearTimeout(timer); reject(e) } })
    })
  }

  private write(data: string | Buffer): void {
    this.socket.write(data)
  }

  private command(line: string): Promise<string> {
    const r = this.reply()
    this.write(`${line}\r\n`)
    return r
  }

  /**
   * One message transaction. Resolves with the final reply (250) or rejects with an SmtpClientError whose
   * command says where it failed: "MAIL FROM", "RCPT TO", "DATA", or "CONN" for a connection lost.
   */
  async send(from: string, to: string, raw: Buffer): Promise<string> {
    if (this.fatal) throw this.fatal
    if (/[\r\n<>]/.test(from)) throw new SmtpClientError(`Invalid sender ${JSON.stringify(from)}`, 'EENVELOPE', undefined, 'API')
    if (!to || /[\r\n<>]/.test(to)) throw new SmtpClientError(`Invalid recipient ${JSON.stringify(to)}`, 'EENVELOPE', undefined, 'API')
    let args = ''
    if (this.extensions.has('SMTPUTF8') && !(ascii(from) && ascii(to))) args += ' SMTPUTF8'
    if (this.extensions.has('SIZE')) args += ` SIZE=${raw.length}`
    const mailCmd = `MAIL FROM:<${from}>${args}`
    const rcptCmd = `RCPT TO:<${to}>`
    this.phase = 'CONN'
    let mail: string, rcpt: string, data: string
    if (this.extensions.has('PIPELINING')) {
      const a = this.reply(), b = this.reply(), c = this.reply()
      this.write(`${mailCmd}\r\n${rcptCmd}\r\nDATA\r\n`)
      ;[mail, rcpt, data] = await Promise.all([a, b, c])
      if (data.startsWith('354') && (!mail.startsWith('2') || !rcpt.startsWith('2'))) {
        // A server that opens DATA after refusing the envelope gets an empty message, then RSET.
        await this.command('.')
      }
    } else {
      mail = await this.command(mailCmd)
      rcpt = mail.startsWith('2') ? await this.command(rcptCmd) : ''
      data = mail.startsWith('2') && rcpt.startsWith('2') ? await this.command('DATA') : ''
    }
    if (!mail.startsWith('2')) throw new SmtpClientError(`Mail command failed: ${mail}`, 'EENVELOPE', mail, 'MAIL FROM')
    if (!rcpt.startsWith('2')) throw new SmtpClientError(`Recipient command failed: ${rcpt}`, 'EENVELOPE', rcpt, 'RCPT TO')
    if (!data.startsWith('354')) throw new SmtpClientError(`Data command failed: ${data}`, 'EENVELOPE', data, 'DATA')
    const done = this.reply()
    this.write(dataContent(raw))
    const final = await done
    if (!final.startsWith('2')) throw new SmtpClientError(`Message failed: ${final}`, 'EMESSAGE', final, 'DATA')
    return final
  }

  /** RSET; false when the session cannot go on. */
  async reset(): Promise<boolean> {
    try {
      return (await this.command('RSET')).startsWith('2')
    } catch {
      return false
    }
  }

  close(): void {
    const wasDead = this.dead
    this.fail(new SmtpClientError('Connection closed', 'ECONNECTION', undefined, 'API'))
    const s = this.socket
    if (!s) return
    try {
      if (!wasDead && !s.destroyed) s.end('QUIT\r\n')
    } catch { /* already gone */ }
    setTimeout(() => { try { s.destroy() } catch { /* already gone */ } }, 1000).unref?.()
  }
}
