import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, type ReactNode, useEffect } from 'react'
import { Link, Route, Switch, useSearch } from 'wouter'
import { get, post, type PublicConfig, type User } from '../../api'
import { ErrorBox, Field, fieldError, Loading } from '../../components/ui'
import { type MessageKey, t } from '../../i18n'

function AuthCard({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="center">
      <main className="auth" id="main">
        <span className="brand">mailctl</span>
        <div className="card">
          <h1>{title}</h1>
          {children}
        </div>
      </main>
    </div>
  )
}

type OAuthProvider = 'github' | 'google'
const PROVIDER_LABEL: Record<OAuthProvider, string> = { github: 'GitHub', google: 'Google' }

/**
 * What the OAuth callback's `?oauth_error=<code>&provider=<name>` means. The messages are the dashboard's
 * own: the URL only picks one, so a crafted link cannot put words on this page.
 */
function oauthErrorMessage(code: string, provider: string | null): string {
  const p = provider === 'github' || provider === 'google' ? PROVIDER_LABEL[provider] : t('auth.theProvider')
  const known = ['access_denied', 'invalid_state', 'unverified_email', 'provider_error', 'signup_disabled', 'try_again', 'rate_limited']
  return t(`auth.err.${known.includes(code) ? code : 'other'}` as MessageKey, { p })
}

/** What went wrong on the way back from the provider (/app/?oauth_error=<code>&provider=<name>), if anything. */
function OAuthError() {
  const search = new URLSearchParams(useSearch())
  const error = search.get('oauth_error')
  if (!error) return null
  return <div className="alert error" role="alert">{oauthErrorMessage(error, search.get('provider'))}</div>
}

/** "Sign in with GitHub / Google" for the providers this server has on (GET /auth/oauth-config). */
function OAuthButtons() {
  const providers = useQuery({ queryKey: ['oauth-config'], queryFn: () => get<Record<OAuthProvider, boolean>>('/auth/oauth-config') })
  const on = (Object.keys(PROVIDER_LABEL) as OAuthProvider[]).filter((p) => providers.data?.[p])
  if (on.length === 0) return null
  return (
    <div className="oauth">
      <p className="or muted small"><span>{t('auth.or')}</span></p>
      {/* Plain links, not the router's: the sign-in leaves the app for the server, then the provider. */}
      {on.map((p) => <a key={p} className="button secondary" href={`/auth/oauth/${p}`}>{t('auth.with', { p: PROVIDER_LABEL[p] })}</a>)}
    </div>
  )
}

const formValues = (e: FormEvent<HTMLFormElement>) => Object.fromEntries(new FormData(e.currentTarget)) as Record<string, string>

/** The screens of a visitor without a session; any other path shows sign-in. */
export function SignedOut() {
  return (
    <Switch>
      <Route path="/signup"><SignUp /></Route>
      <Route path="/forgot-password"><ForgotPassword /></Route>
      <Route path="/reset-password"><ResetPassword /></Route>
      <Route path="/verify-email"><VerifyEmail /></Route>
      <Route><SignIn /></Route>
    </Switch>
  )
}

function useSignedIn() {
  const qc = useQueryClient()
  return (user: User) => {
    // What was asked while signed out (main.tsx starts some requests early) answered 401: ask again.
    qc.removeQueries({ predicate: (q) => q.queryKey[0] !== 'me' })
    qc.setQueryData(['me'], user)
  }
}

export function SignIn() {
  const firstRun = useQuery({ queryKey: ['first-run'], queryFn: () => get<{ firstRun: boolean }>('/auth/first-run') })
  const config = useQuery({ queryKey: ['config'], queryFn: () => get<PublicConfig>('/config') })
  const signedIn = useSignedIn()
  const login = useMutation({ mutationFn: (v: Record<string, string>) => post<User>('/auth/login', v), onSuccess: signedIn })
  if (firstRun.isPending) return <Loading />
  if (firstRun.data?.firstRun) return <FirstRun />
  return (
    <AuthCard title={t('auth.signIn')}>
      <OAuthError />
      <form onSubmit={(e) => { e.preventDefault(); login.mutate(formValues(e)) }} noValidate>
        <ErrorBox error={login.error} shown={['email', 'password']} />
        <Field label={t('auth.email')} name="email" type="email" autoComplete="email" required error={fieldError(login.error, 'email')} />
        <Field label={t('auth.password')} name="password" type="password" autoComplete="current-password" required error={fieldError(login.error, 'password')} />
        <div className="row">
          <button type="submit" disabled={login.isPending}>{login.isPending ? t('auth.signingIn') : t('auth.signIn')}</button>
          <Link href="/forgot-password">{t('auth.forgot')}</Link>
        </div>
      </form>
      <OAuthButtons />
      {config.data && !config.data.features.signup.disabled && <p className="small">{t('auth.noAccount')}<Link href="/signup">{t('auth.signUp')}</Link></p>}
    </AuthCard>
  )
}

/** An instance with no account: the first is made on the server, by whoever runs it. */
export function FirstRun() {
  const qc = useQueryClient()
  const config = useQuery({ queryKey: ['config'], queryFn: () => get<PublicConfig>('/config') })
  if (config.isPending) return <Loading />
  // With sign-up open, the first account is made here like any other.
  if (config.data && !config.data.features.signup.disabled) {
    return (
      <AuthCard title={t('auth.welcome')}>
        <OAuthError />
        <p>{t('auth.noAccounts')}</p>
        <Link className="button" href="/signup">{t('auth.createAccount')}</Link>
        <OAuthButtons />
        <p className="small muted">{t('auth.orCli1')}<code>mailctl user create --email you@example.com</code>{t('auth.orCli2')}</p>
        {/* The first-run answer is cached: asking again shows the sign-in form once an account exists. */}
        <button type="button" onClick={() => qc.invalidateQueries({ queryKey: ['first-run'] })}>{t('auth.created')}</button>
      </AuthCard>
    )
  }
  return (
    <AuthCard title={t('auth.welcome')}>
      <OAuthError />
      <p>{t('auth.signupOff')}</p>
      <pre className="code">mailctl user create --email you@example.com</pre>
      <p className="muted small">{t('auth.asksPassword1')}<code>--password</code>{t('auth.asksPassword2')}</p>
      <button type="button" onClick={() => qc.invalidateQueries({ queryKey: ['first-run'] })}>{t('auth.created')}</button>
    </AuthCard>
  )
}

function SignUp() {
  const search = new URLSearchParams(useSearch())
  const config = useQuery({ queryKey: ['config'], queryFn: () => get<PublicConfig>('/config') })
  const signup = useMutation({ mutationFn: (v: Record<string, string>) => post<{ message: string }>('/auth/signup', v) })
  if (config.data?.features.signup.disabled) {
    return <AuthCard title={t('auth.signUp')}><p>{t('auth.signupDisabled')}</p><Link href="/">{t('auth.backToSignIn')}</Link></AuthCard>
  }
  if (signup.isSuccess) {
    // The same answer whether or not the address already has an account: the email says which.
    return (
      <AuthCard title={t('auth.checkInbox')}>
        <div className="alert ok" role="status">{signup.data.message}</div>
        <p className="small"><Link href="/">{t('auth.signIn')}</Link></p>
      </AuthCard>
    )
  }
  return (
    <AuthCard title={t('auth.createAccount')}>
      <form onSubmit={(e) => { e.preventDefault(); signup.mutate(formValues(e)) }} noValidate>
        <ErrorBox error={signup.error} shown={['email', 'password']} />
        <Field label={t('auth.email')} name="email" type="email" autoComplete="email" required defaultValue={search.get('email') ?? ''} error={fieldError(signup.error, 'email')} />
        <Field label={t('auth.password')} name="password" type="password" autoComplete="new-password" required hint={t('auth.atLeast8')} error={fieldError(signup.error, 'password')} />
        <button type="submit" disabled={signup.isPending}>{signup.isPending ? t('auth.creating') : t('auth.signUp')}</button>
      </form>
      <p className="small">{t('auth.haveAccount')}<Link href="/">{t('auth.signIn')}</Link></p>
    </AuthCard>
  )
}

function ForgotPassword() {
  const ask = useMutation({ mutationFn: (v: Record<string, string>) => post<{ message: string }>('/auth/request-password-reset', v) })
  return (
    <AuthCard title={t('auth.reset')}>
      {ask.isSuccess ? (
        <div className="alert ok" role="status">{t('auth.resetSent')}</div>
      ) : (
        <form onSubmit={(e) => { e.preventDefault(); ask.mutate(formValues(e)) }} noValidate>
          <ErrorBox error={ask.error} shown={['email']} />
          <Field label={t('auth.email')} name="email" type="email" autoComplete="email" required error={fieldError(ask.error, 'email')} />
          <button type="submit" disabled={ask.isPending}>{t('auth.sendReset')}</button>
        </form>
      )}
      <p className="small"><Link href="/">{t('auth.backToSignIn')}</Link></p>
    </AuthCard>
  )
}

function ResetPassword() {
  const token = new URLSearchParams(useSearch()).get('token') ?? ''
  const reset = useMutation({ mutationFn: (v: Record<string, string>) => post('/auth/reset-password', { token, password: v.password }) })
  if (!token) return <ForgotPassword />
  return (
    <AuthCard title={t('auth.choose')}>
      {reset.isSuccess ? (
        <div className="alert ok" role="status">{t('auth.changed')}<Link href="/">{t('auth.signIn')}</Link></div>
      ) : (
        <form onSubmit={(e) => { e.preventDefault(); reset.mutate(formValues(e)) }} noValidate>
          <ErrorBox error={reset.error} shown={['password']} />
          <Field label={t('auth.newPassword')} name="password" type="password" autoComplete="new-password" required hint={t('auth.atLeast8')} error={fieldError(reset.error, 'password')} />
          <button type="submit" disabled={reset.isPending}>{t('auth.setPassword')}</button>
        </form>
      )}
    </AuthCard>
  )
}

/** The link of the verification mail; works signed in or not. */
export function VerifyEmail() {
  const token = new URLSearchParams(useSearch()).get('token') ?? ''
  const qc = useQueryClient()
  const verify = useMutation({
    mutationFn: () => post<User>('/auth/verify-email', { token }),
    // Verifying accepts the invitations for the address: the projects list changes too.
    onSuccess: () => Promise.all([qc.invalidateQueries({ queryKey: ['me'] }), qc.invalidateQueries({ queryKey: ['projects'] })]),
  })
  const { mutate } = verify
  useEffect(() => { if (token) mutate() }, [token, mutate])
  return (
    <AuthCard title={t('auth.verify')}>
      {!token && <p>{t('auth.noToken')}</p>}
      {verify.isPending && <Loading label={t('auth.verifying')} />}
      <ErrorBox error={verify.error} />
      {verify.isSuccess && <div className="alert ok" role="status">{t('auth.verified', { email: verify.data.email })}</div>}
      <Link href="/">{t('auth.continue')}</Link>
    </AuthCard>
  )
}
