import type { Deps } from '../../deps'
import pkg from '../../../package.json'
import type { PublicConfig } from './model'

/** Port of implicit-TLS submission, enabled with MAILCTL_SMTP_TLS_CERT/KEY (OPERATIONS.md). */
export const SMTPS_PORT = 465

/** GET /config: what a client or the dashboard needs to know about this server; no secrets. */
export function publicConfig(deps: Deps): PublicConfig {
  const c = deps.config
  const relay = c.smtpRelayPort !== 0
  const tls = Boolean(c.smtpTlsCert && c.smtpTlsKey)
  return {
    version: pkg.version,
    urls: { api: c.publicUrl, dashboard: c.publicUrl },
    features: {
      billing: { enabled: false },
      storage: { enabled: false },
      authProviders: { github: false, google: false },
      signup: { disabled: c.signupDisabled },
      smtp: {
        enabled: relay,
        domain: c.hostname,
        ports: { submission: relay ? c.smtpRelayPort : null, secure: relay && tls ? SMTPS_PORT : null },
      },
      tracking: { enabled: true },
    },
  }
}
