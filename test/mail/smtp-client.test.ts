import { afterAll, describe, expect, test } from 'bun:test'
import { SMTPServer } from 'smtp-server'
import DataStream from 'nodemailer/lib/smtp-connection/data-stream'
import { dataContent } from '../../src/mail/outbound/data-content'
import { SmtpClient, SmtpClientError } from '../../src/mail/outbound/smtp-client'
import { ConnectError, ConnectionPool } from '../../src/mail/outbound/pool'

/** The outbound SMTP client against a real smtp-server on loopback, and its DATA encoding against nodemailer's. */

async function nodemailerData(raw: Buffer): Promise<Buffer> {
  const ds = new DataStream()
  const chunks: Buffer[] = []
  ds.on('data', (c: Buffer) => chunks.push(c))
  const ended = new Promise((r) => ds.on('end', r))
  ds.end(raw)
  await ended
  return Buffer.concat(chunks)
}

interface Received { from: string; to: string[]; raw: Buffer; secure: boolean; user: string | null }

async function server(opts: { pipelining: boolean; authMethods?: string[]; refuse?: string }) {
  const received: Received[] = []
  const srv = new SMTPServer({
    logger: false,
    hidePIPELINING: !opts.pipelining,
    authOptional: !opts.authMethods,
    ...(opts.authMethods ? { authMethods: opts.authMethods, allowInsecureAuth: true } : { disabledCommands: ['AUTH'] }),
    onAuth(auth, _s, cb) {
      if (auth.username === 'u' && auth.password === 'p w') return cb(null, { user: auth.username })
      const err = new Error('Authentication credentials invalid') as Error & { responseCode: number }
      err.responseCode = 535
      cb(err)
    },
    onRcptTo(address, _s, cb) {
      if (address.address === opts.refuse) {
        const err = new Error('5.1.1 No such user') as Error & { responseCode: number }
        err.responseCode = 550
        return cb(err)
      }
      cb()
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const user = session.user as unknown
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks), secure: session.secure, user: typeof user === 'string' ? user : null,
        })
        cb()
      })
    },
  })
  const port = await new Promise<number>((resolve) => {
    const s = srv.listen(0, '127.0.0.1', () => resolve((s.address() as { port: number }).port))
  })
  servers.push(srv)
  return { port, received }
}

const servers: SMTPServer[] = []
afterAll(() => { for (const s of servers) s.close() })

const base = { host: '127.0.0.1', secure: false, name: 'client.test', connectionTimeout: 5000, greetingTimeout: 5000, socketTimeout: 5000 }

describe('SMTP client', () => {
  test('DATA content equals nodemailer\'s DataStream output (dot-stuffing, bare CR and LF, terminator)', async () => {
    const alphabet = ['.', '\r', '\n', '\r\n', 'a', ' ', '..', '\r\n.\r\n']
    let seed = 5
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
    const samples = ['a', '.', 'a\r\n', 'a\r\n.b\r\n', `${'x'.repeat(100)}\r\n`, 'end with cr\r']
    for (let i = 0; i < 2000; i++) samples.push(Array.from({ length: 1 + rand(30) }, () => alphabet[rand(alphabet.length)]).join(''))
    for (const s of samples) {
      const raw = Buffer.from(s, 'latin1')
      expect(dataContent(raw).toString('latin1')).toBe((await nodemailerData(raw)).toString('latin1'))
    }
  })

  for (const pipelining of [true, false]) {
    test(`${pipelining ? 'pipelined' : 'one command at a time'}: STARTTLS, AUTH LOGIN, messages intact, a refused recipient at RCPT, then RSET and on`, async () => {
      const srv = await server({ pipelining, authMethods: ['LOGIN'], refuse: 'gone@dest.test' })
      const c = await SmtpClient.open({ ...base, port: srv.port, auth: { user: 'u', pass: 'p w' } })
      expect(c.secure).toBe(true)
      const raw = Buffer.from('Subject: x\r\n\r\n.leading dot\r\n..two\r\nbare\nlf\r\n', 'latin1')
      expect(await c.send('bounce@src.test', 'ok@dest.test', raw)).toStartWith('250')
      const refused = await c.send('bounce@src.test', 'gone@dest.test', raw).catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(SmtpClientError)
      expect((refused as SmtpClientError).command).toBe('RCPT TO')
      expect((refused as SmtpClientError).responseCode).toBe(550)
      expect(await c.reset()).toBe(true)
      expect(await c.send('bounce@src.test', 'ok2@dest.test', raw)).toStartWith('250')
      c.close()
      expect(srv.received.map((r) => r.to[0])).toEqual(['ok@dest.test', 'ok2@dest.test'])
      for (const r of srv.received) {
        expect(r.raw.toString('latin1')).toBe('Subject: x\r\n\r\n.leading dot\r\n..two\r\nbare\r\nlf\r\n')
        expect(r.secure).toBe(true)
        expect(r.user).toBe('u')
        expect(r.from).toBe('bounce@src.test')
      }
    })
  }

  test('a wrong password fails the session at AUTH with the server\'s reply; a closed port fails to connect', async () => {
    const srv = await server({ pipelining: true, authMethods: ['PLAIN', 'LOGIN'] })
    const err = await SmtpClient.open({ ...base, port: srv.port, auth: { user: 'u', pass: 'wrong' } }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SmtpClientError)
    expect((err as SmtpClientError).responseCode).toBe(535)
    expect((err as SmtpClientError).command).toStartWith('AUTH')
    const closed = await SmtpClient.open({ ...base, port: 1 }).catch((e: unknown) => e)
    expect(closed).toBeInstanceOf(SmtpClientError)
    expect((closed as SmtpClientError).command).toBe('CONN')
  })
})

describe('opportunistic TLS in the pool', () => {
  /** Offers STARTTLS, speaks only TLS 1.0 (which the client refuses), and counts its sessions. */
  async function tls10Server() {
    let sessions = 0
    const srv = new SMTPServer({
      logger: false, authOptional: true, authMethods: ['PLAIN'], allowInsecureAuth: true, minVersion: 'TLSv1', maxVersion: 'TLSv1',
      onConnect(_s, cb) { sessions++; cb() },
      onAuth(_a, _s, cb) { cb(null, { user: 'u' }) },
      onData(stream, _s, cb) { stream.resume(); stream.on('end', () => cb()) },
    })
    srv.on('error', () => { /* the failed handshakes */ })
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()))
    const port = (srv.server.address() as { port: number }).port
    return { port, sessions: () => sessions, close: () => new Promise<void>((r) => srv.close(() => r())) }
  }

  test('a failed handshake is followed at once by a session in clear that carries the reason; the next connection skips STARTTLS', async () => {
    const s = await tls10Server()
    const pool = new ConnectionPool({ name: 'client.test' })
    try {
      const target = { host: '127.0.0.1', port: s.port }
      const first = await pool.acquire(target)
      expect(first.conn.secure).toBe(false)
      expect(first.conn.clearReason).toMatch(/^STARTTLS offered but the TLS handshake failed \(TLS handshake failed: .*PROTOCOL_VERSION/)
      expect(s.sessions()).toBe(2)
      const sent = await first.conn.send('a@client.test', 'b@server.test', Buffer.from('Subject: x\r\n\r\nhi\r\n'))
      expect(sent).toMatchObject({ ok: true, secure: false })
      expect(sent.ok && sent.clearReason).toContain('handshake failed')
      await pool.release(first.conn, 'close')
      const second = await pool.acquire(target)
      expect(second.conn.clearReason).toMatch(/^STARTTLS not tried: the TLS handshake with this server failed less than an hour ago/)
      expect(s.sessions()).toBe(3)
      await pool.release(second.conn, 'close')
    } finally {
      pool.closeAll()
      await s.close()
    }
  })

  test('a smart host with credentials never falls back to clear (its password would go in clear)', async () => {
    const s = await tls10Server()
    const pool = new ConnectionPool({ name: 'client.test' })
    try {
      const err = await pool.acquire({ host: '127.0.0.1', port: s.port, auth: { user: 'u', pass: 'p' } }).then(() => null, (e: unknown) => e)
      expect(err).toBeInstanceOf(ConnectError)
      expect((err as ConnectError).tlsHandshake).toBe(true)
      expect(s.sessions()).toBe(1)
    } finally {
      pool.closeAll()
      await s.close()
    }
  })
})
