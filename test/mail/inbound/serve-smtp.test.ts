import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import { loadConfig } from '../../../src/config'
import { serve } from '../../../src/main'
import { createProject } from '../../../src/modules/projects/service'
import { freePort } from '../../helpers/ports'

/** `serve --role smtp` starts the inbound receiver and the relay on their configured ports (0 disables). */

const dir = mkdtempSync(join(tmpdir(), 'mailctl-serve-smtp-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function verify(port: number, auth?: { user: string; pass: string }): Promise<true | string> {
  const t = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, ...(auth ? { auth } : {}) })
  try {
    return await t.verify()
  } catch (err) {
    return (err as Error).message
  } finally {
    t.close()
  }
}

test('serve --role smtp: receiver and relay listen; port 0 disables each', async () => {
  const [inboundPort, relayPort] = [freePort(), freePort()]
  const base = { dataDir: dir, databaseUrl: `sqlite://${join(dir, 'm.db')}`, logLevel: 'silent' as const, hostname: 'mx.serve.test', jwtSecret: 'x'.repeat(32) }
  const running = await serve(loadConfig({ env: {}, overrides: { ...base, smtpInboundPort: inboundPort, smtpRelayPort: relayPort } }), ['smtp'])
  try {
    expect(await verify(inboundPort)).toBe(true)
    const project = await createProject(running.deps.store, { name: 'serve-smtp' })
    expect(await verify(relayPort, { user: 'app', pass: project.secretKey })).toBe(true)
    expect(String(await verify(relayPort, { user: 'app', pass: project.publicKey }))).toContain('535')
  } finally {
    await running.stop()
  }
  // Stopped: nothing listens any more.
  expect(await verify(inboundPort)).not.toBe(true)
  const off = await serve(loadConfig({ env: {}, overrides: { ...base, smtpInboundPort: 0, smtpRelayPort: 0 } }), ['smtp'])
  try {
    expect(await verify(inboundPort)).not.toBe(true)
    expect(await verify(relayPort)).not.toBe(true)
  } finally {
    await off.stop()
  }
})

test('with MAILCTL_SMTP_TLS_CERT/KEY the receiver offers STARTTLS (and still takes mail in clear from MTAs that do not use it)', async () => {
  const keyPath = join(dir, 'key.pem')
  const certPath = join(dir, 'cert.pem')
  const made = Bun.spawnSync(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=mx.serve.test'], { stderr: 'pipe' })
  expect(made.exitCode).toBe(0)
  const port = freePort()
  const config = loadConfig({ env: {}, overrides: {
    dataDir: dir, databaseUrl: `sqlite://${join(dir, 'tls.db')}`, logLevel: 'silent', hostname: 'mx.serve.test', jwtSecret: 'y'.repeat(32),
    smtpInboundPort: port, smtpRelayPort: 0, smtpTlsCert: certPath, smtpTlsKey: keyPath,
  } })
  const running = await serve(config, ['smtp'])
  try {
    const tls = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, requireTLS: true, tls: { rejectUnauthorized: false } })
    expect(await tls.verify()).toBe(true)
    tls.close()
    expect(await verify(port)).toBe(true)
  } finally {
    await running.stop()
  }
})
