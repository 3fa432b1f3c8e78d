import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, type ReactNode, useEffect } from 'react'
import { Link, Route, Switch, useSearch } from 'wouter'
import { get, post, type PublicConfig, type User } from '../../api'
import { ErrorBox, Field, fieldError, Loading } from '../../components/ui'

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
  const p = provider === 'github' || provider === 'google' ? PROVIDER_LABEL[provider] : 'the provider'
  switch (code) {
    case 'access_denied': return `Sign-in with ${p} was cancelled. Nothing was changed.`
    case 'invalid_state': return 'That sign-in expired or was started in another browser or tab. Start it again from this page.'
    case 'unverified_email': return `${p} did not confirm an email address for that account. Verify your primary email address at ${p}, then try again.`
    case 'provider_error': return `${p} could not be reached or did not accept the sign-in. Try again in a moment.`
    case 'signup_disabled': return `No account on this server uses the email address of that ${p} account, and sign-up is turned off. Ask an administrator to create your account, then sign in with ${p}.`
    case 'try_again': return 'The sign-in was interrupted by another one for the same account. Try again.'
    case 'rate_limited': return 'Too many sign-ins from your network in the last few minutes. Wait a quarter of an hour, then try again.'
    default: return `Sign-in with ${p} failed because of a problem on this server. Try again; if it keeps happening, tell its administrator.`
  }
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
      <p className="or muted small"><span>or</span></p>
      {/* Plain links, not the router's: the sign-in leaves the app for the server, then the provider. */}
      {on.map((p) => <a key={p} className="button secondary" href={`/auth/oauth/${p}`}>Sign in with {PROVIDER_LABEL[p]}</a>)}
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
    <AuthCard title="Sign in">
      <OAuthError />
      <form onSubmit={(e) => { e.preventDefault(); login.mutate(formValues(e)) }} noValidate>
        <ErrorBox error={login.error} shown={['email', 'password']} />
        <Field label="Email" name="email" type="email" autoComplete="email" required error={fieldError(login.error, 'email')} />
        <Field label="Password" name="password" type="password" autoComplete="current-password" required error={fieldError(login.error, 'password')} />
        <div className="row">
          <button type="submit" disabled={login.isPending}>{login.isPending ? 'Signing in…' : 'Sign in'}</button>
          <Link href="/forgot-password">Forgot your password?</Link>
        </div>
      </form>
      <OAuthButtons />
      {config.data && !config.data.features.signup.disabled && <p className="small">No account yet? <Link href="/signup">Sign up</Link></p>}
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
      <AuthCard title="Welcome to mailctl">
        <OAuthError />
        <p>This server has no accounts yet. Create yours to start: you can then create projects and invite your team.</p>
        <Link className="button" href="/signup">Create your account</Link>
        <OAuthButtons />
        <p className="small muted">Or on the machine that runs mailctl: <code>mailctl user create --email you@example.com</code>, then sign in.</p>
        {/* The first-run answer is cached: asking again shows the sign-in form once an account exists. */}
        <button type="button" onClick={() => qc.invalidateQueries({ queryKey: ['first-run'] })}>I have created it: sign in</button>
      </AuthCard>
    )
  }
  return (
    <AuthCard title="Welcome to mailctl">
      <OAuthError />
      <p>This server has no accounts yet, and sign-up is turned off. Create the first one on the machine that runs mailctl:</p>
      <pre className="code">mailctl user create --email you@example.com</pre>
      <p className="muted small">It asks for a password (or takes <code>--password</code>). Then sign in here with that address; you can create projects and invite your team from the dashboard.</p>
      <button type="button" onClick={() => qc.invalidateQueries({ queryKey: ['first-run'] })}>I have created it: sign in</button>
    </AuthCard>
  )
}

function SignUp() {
  const search = new URLSearchParams(useSearch())
  const config = useQuery({ queryKey: ['config'], queryFn: () => get<PublicConfig>('/config') })
  const signup = useMutation({ mutationFn: (v: Record<string, string>) => post<{ message: string }>('/auth/signup', v) })
  if (config.data?.features.signup.disabled) {
    return <AuthCard title="Sign up"><p>Sign-up is turned off on this server. Ask its administrator for an account.</p><Link href="/">Back to sign in</Link></AuthCard>
  }
  if (signup.isSuccess) {
    // The same answer whether or not the address already has an account: the email says which.
    return (
      <AuthCard title="Check your inbox">
        <div className="alert ok" role="status">{signup.data.message}</div>
        <p className="small"><Link href="/">Sign in</Link></p>
      </AuthCard>
    )
  }
  return (
    <AuthCard title="Create your account">
      <form onSubmit={(e) => { e.preventDefault(); signup.mutate(formValues(e)) }} noValidate>
        <ErrorBox error={signup.error} shown={['email', 'password']} />
        <Field label="Email" name="email" type="email" autoComplete="email" required defaultValue={search.get('email') ?? ''} error={fieldError(signup.error, 'email')} />
        <Field label="Password" name="password" type="password" autoComplete="new-password" required hint="At least 8 characters" error={fieldError(signup.error, 'password')} />
        <button type="submit" disabled={signup.isPending}>{signup.isPending ? 'Creating…' : 'Sign up'}</button>
      </form>
      <p className="small">Already have an account? <Link href="/">Sign in</Link></p>
    </AuthCard>
  )
}

function ForgotPassword() {
  const ask = useMutation({ mutationFn: (v: Record<string, string>) => post<{ message: string }>('/auth/request-password-reset', v) })
  return (
    <AuthCard title="Reset your password">
      {ask.isSuccess ? (
        <div className="alert ok" role="status">If an account uses that address, a reset link is on its way. It works once, for one hour.</div>
      ) : (
        <form onSubmit={(e) => { e.preventDefault(); ask.mutate(formValues(e)) }} noValidate>
          <ErrorBox error={ask.error} shown={['email']} />
          <Field label="Email" name="email" type="email" autoComplete="email" required error={fieldError(ask.error, 'email')} />
          <button type="submit" disabled={ask.isPending}>Send the reset link</button>
        </form>
      )}
      <p className="small"><Link href="/">Back to sign in</Link></p>
    </AuthCard>
  )
}

function ResetPassword() {
  const token = new URLSearchParams(useSearch()).get('token') ?? ''
  const reset = useMutation({ mutationFn: (v: Record<string, string>) => post('/auth/reset-password', { token, password: v.password }) })
  if (!token) return <ForgotPassword />
  return (
    <AuthCard title="Choose a new password">
      {reset.isSuccess ? (
        <div className="alert ok" role="status">Your password is changed and every other session is ended. <Link href="/">Sign in</Link></div>
      ) : (
        <form onSubmit={(e) => { e.preventDefault(); reset.mutate(formValues(e)) }} noValidate>
          <ErrorBox error={reset.error} shown={['password']} />
          <Field label="New password" name="password" type="password" autoComplete="new-password" required hint="At least 8 characters" error={fieldError(reset.error, 'password')} />
          <button type="submit" disabled={reset.isPending}>Set the password</button>
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
    <AuthCard title="Verify your email">
      {!token && <p>This link has no token. Open the link from the verification email again.</p>}
      {verify.isPending && <Loading label="Verifying…" />}
      <ErrorBox error={verify.error} />
      {verify.isSuccess && <div className="alert ok" role="status">{verify.data.email} is verified. Invitations to projects for it are accepted.</div>}
      <Link href="/">Continue to mailctl</Link>
    </AuthCard>
  )
}
