import { expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import pkg from '../../../package.json'

forEachStore('GET /config (defaults)', (env) => {
  test('answers the shape of docs/decisions.md (GET /config) without authentication', async () => {
    const res = await env.request('GET', '/config')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      version: pkg.version,
      urls: { api: 'http://localhost:3000', dashboard: 'http://localhost:3000' },
      features: {
        billing: { enabled: false },
        storage: { enabled: true },
        authProviders: { github: false, google: false },
        signup: { disabled: false },
        smtp: { enabled: true, domain: 'mx.mailctl.test', ports: { submission: env.config.smtpRelayPort, secure: null } },
        tracking: { enabled: true },
      },
    })
  })

  test('ignores credentials and never leaks secrets', async () => {
    const p = await env.project()
    const res = await env.request('GET', '/config', { key: p.secretKey })
    expect(res.status).toBe(200)
    expect(res.text).not.toContain(env.deps.secret)
    expect(res.text).not.toContain(env.config.databaseUrl)
  })
})

forEachStore('GET /config (relay off, signup off, https)', (env) => {
  test('reflects the settings', async () => {
    const res = await env.request('GET', '/config')
    expect(res.body.urls).toEqual({ api: 'https://mail.example.com', dashboard: 'https://mail.example.com' })
    expect(res.body.features.signup).toEqual({ disabled: true })
    expect(res.body.features.smtp).toEqual({ enabled: false, domain: 'mx.mailctl.test', ports: { submission: null, secure: null } })
  })
}, { smtpRelayPort: 0, signupDisabled: true, publicUrl: 'https://mail.example.com' })

forEachStore('GET /config (relay with TLS)', (env) => {
  test('shows the implicit-TLS port when a certificate is configured', async () => {
    const res = await env.request('GET', '/config')
    expect(res.body.features.smtp).toEqual({ enabled: true, domain: 'mx.mailctl.test', ports: { submission: 587, secure: 465 } })
  })
}, { smtpRelayPort: 587, smtpTlsCert: '/etc/ssl/mail.pem', smtpTlsKey: '/etc/ssl/mail.key' })

forEachStore('GET /config (implicit TLS moved: MAILCTL_SMTP_SECURE_PORT)', (env) => {
  test('shows the configured implicit-TLS port', async () => {
    const res = await env.request('GET', '/config')
    expect(res.body.features.smtp.ports).toEqual({ submission: 2587, secure: 2465 })
  })
}, { smtpRelayPort: 2587, smtpSecurePort: 2465, smtpTlsCert: '/etc/ssl/mail.pem', smtpTlsKey: '/etc/ssl/mail.key' })

forEachStore('GET /config (implicit TLS off: MAILCTL_SMTP_SECURE_PORT=0)', (env) => {
  test('shows no implicit-TLS port', async () => {
    const res = await env.request('GET', '/config')
    expect(res.body.features.smtp.ports).toEqual({ submission: 587, secure: null })
  })
}, { smtpRelayPort: 587, smtpSecurePort: 0, smtpTlsCert: '/etc/ssl/mail.pem', smtpTlsKey: '/etc/ssl/mail.key' })
