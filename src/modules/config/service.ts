import type { Deps } from '../../deps'
import pkg from '../../../package.json'
import type { PublicConfig } from './model'
import { providerSettings } from '../billing/provider'
import { providersOn } from '../auth/oauth-providers'

/** GET /config: what a client or the dashboard needs to know about this server; no secrets. */
export function publicConfig(deps: Deps): PublicConfig {
  const c = deps.config
  const relay = c.smtpRelayPort !== 0
  const tls = Boolean(c.smtpTlsCert && c.smtpTlsKey)
  return {
    version: pkg.version,
    urls: { api: c.publicUrl, dashboard: c.publicUrl },
    features: {
      billing: { enabled: providerSettings(c) !== null },
      storage: { enabled: true },
      authProviders: providersOn(c),
      signup: { disabled: c.signupDisabled },
      smtp: {
        enabled: relay,
        domain: c.hostname,
        ports: { submission: relay ? c.smtpRelayPort : null, secure: relay && tls && c.smtpSecurePort ? c.smtpSecurePort : null },
      },
      tracking: { enabled: true },
    },
  }
}
