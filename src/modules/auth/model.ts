import { t } from 'elysia'
import { Email, Password } from '../users/model'

export const SignupBody = t.Object({
  email: Email,
  password: Password,
  name: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
})
export type SignupBody = typeof SignupBody.static

export const LoginBody = t.Object({
  email: Email,
  password: t.String({ minLength: 1, maxLength: 256, error: 'password is required' }),
})
export type LoginBody = typeof LoginBody.static

export const EmailBody = t.Object({ email: Email })
export const TokenBody = t.Object({ token: t.String({ minLength: 1, maxLength: 200, error: 'token is required' }) })
export const ResetBody = t.Object({
  token: t.String({ minLength: 1, maxLength: 200, error: 'token is required' }),
  password: Password,
})

export const Ack = t.Object({ success: t.Literal(true), message: t.String() })

export const FirstRun = t.Object({
  firstRun: t.Boolean({ description: 'No account exists yet: the first is made on the server with `mailctl user create`' }),
}, { description: 'Whether this server has any user account yet' })

export const OAuthConfig = t.Object({
  github: t.Boolean({ description: 'Sign-in with GitHub is on (MAILCTL_OAUTH_GITHUB_ID and _SECRET are set)' }),
  google: t.Boolean({ description: 'Sign-in with Google is on (MAILCTL_OAUTH_GOOGLE_ID and _SECRET are set)' }),
}, { description: 'The OAuth providers the dashboard offers for sign-in' })

export const OAuthProviderParams = t.Object({ provider: t.String({ description: 'github or google' }) })

/** What a provider sends back (RFC 6749 4.1.2); other parameters (error_description, scope, ...) are ignored. */
export const OAuthCallbackQuery = t.Object({
  code: t.Optional(t.String({ maxLength: 2048 })),
  state: t.Optional(t.String({ maxLength: 2048 })),
  error: t.Optional(t.String({ maxLength: 200 })),
})
