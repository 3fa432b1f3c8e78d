import { t } from 'elysia'

export const PublicConfig = t.Object({
  version: t.String(),
  urls: t.Object({ api: t.String(), dashboard: t.String() }),
  features: t.Object({
    billing: t.Object({ enabled: t.Boolean() }),
    storage: t.Object({ enabled: t.Boolean({ description: 'Image uploads' }) }),
    authProviders: t.Object({ github: t.Boolean(), google: t.Boolean() }),
    signup: t.Object({ disabled: t.Boolean() }),
    smtp: t.Object({
      enabled: t.Boolean({ description: 'The SMTP relay for applications is listening' }),
      domain: t.String({ description: 'Host name to connect to (MAILCTL_HOSTNAME)' }),
      ports: t.Object({
        submission: t.Union([t.Integer(), t.Null()], { description: 'STARTTLS/plain submission port, null when disabled' }),
        secure: t.Union([t.Integer(), t.Null()], { description: 'Implicit-TLS port (MAILCTL_SMTP_SECURE_PORT, 465 by default), null without a TLS certificate or when set to 0' }),
      }),
    }),
    tracking: t.Object({ enabled: t.Boolean() }),
  }),
}, { description: 'Public feature flags of this server (docs/decisions.md, GET /config)' })
export type PublicConfig = typeof PublicConfig.static
