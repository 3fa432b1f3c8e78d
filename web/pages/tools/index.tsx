import { useMutation, useQuery } from '@tanstack/react-query'
import { type FormEvent, useId, useState } from 'react'
import { Link } from 'wouter'
import { type Domain, get, post, type Project } from '../../api'
import { Badge, Empty, ErrorBox, Field, fieldError, Loading, PageHead } from '../../components/ui'

interface VerifyResult {
  email: string; valid: boolean; isDisposable: boolean; isAlias: boolean; isTypo: boolean; isPlusAddressed: boolean
  isPersonalEmail: boolean; domainExists: boolean; hasWebsite: boolean; hasMxRecords: boolean; reasons: string[]; suggestedEmail?: string
}
interface SendResult {
  data: { emails: Array<{ contact: { id: string; email: string }; email?: string; status: string; reason?: string }>; timestamp: string }
}

/**
 * The flags of a verify result in a person's words, with the badge each answer gets: ok (speaks for the
 * address), failed (a reason not to send), pending (worth a look), '' (neither).
 */
const FLAGS: Array<{ key: keyof VerifyResult; label: string; yes: string; no: string }> = [
  { key: 'domainExists', label: 'Domain exists', yes: 'ok', no: 'failed' },
  { key: 'hasMxRecords', label: 'Accepts mail (MX records)', yes: 'ok', no: 'failed' },
  { key: 'hasWebsite', label: 'Has a website', yes: 'ok', no: 'pending' },
  { key: 'isDisposable', label: 'Disposable address', yes: 'failed', no: 'ok' },
  { key: 'isTypo', label: 'Looks like a typo', yes: 'failed', no: 'ok' },
  { key: 'isAlias', label: 'Alias or role address', yes: 'pending', no: 'ok' },
  { key: 'isPlusAddressed', label: 'Plus-addressed (+tag)', yes: 'pending', no: '' },
  { key: 'isPersonalEmail', label: 'Free personal mailbox', yes: '', no: '' },
]

export function ToolsPage({ project }: { project: Project }) {
  return (
    <div>
      <PageHead title="Tools" />
      <VerifyTool project={project} />
      <SendTest project={project} />
    </div>
  )
}

function VerifyTool({ project }: { project: Project }) {
  const [email, setEmail] = useState('')
  const verify = useMutation({ mutationFn: (address: string) => post<{ data: VerifyResult }>('/v1/verify', { email: address }, project.id).then((r) => r.data) })
  const submit = (e: FormEvent) => { e.preventDefault(); verify.mutate(email.trim()) }
  const r = verify.data
  return (
    <section className="card" aria-labelledby="verify-title">
      <h2 id="verify-title">Verify an address</h2>
      <p className="small muted">Checks the syntax, the domain's DNS and known lists (<code>POST /v1/verify</code>). No mail is sent.</p>
      <form onSubmit={submit} noValidate>
        <ErrorBox error={verify.error} shown={['email']} />
        <div className="row">
          <Field label="Email to verify" type="email" value={email} onChange={(e) => setEmail(e.target.value)} placeholder="someone@example.com" error={fieldError(verify.error, 'email')} />
          <button type="submit" disabled={verify.isPending}>{verify.isPending ? 'Verifying…' : 'Verify'}</button>
        </div>
      </form>
      {verify.isPending && <Loading label="Looking the domain up…" />}
      {r && (
        <div aria-live="polite" className="stack" style={{ marginTop: '1rem' }}>
          <div className={`alert ${r.valid ? 'ok' : 'error'}`} role="status">
            <strong>{r.email}</strong>: {r.valid ? 'looks deliverable' : 'not deliverable'}
            {r.suggestedEmail && (
              <> · did you mean <button type="button" className="link" onClick={() => { setEmail(r.suggestedEmail ?? ''); verify.mutate(r.suggestedEmail ?? '') }}>{r.suggestedEmail}</button>?</>
            )}
          </div>
          <dl className="result">
            {FLAGS.map((f) => {
              const v = r[f.key] === true
              return (
                <div key={f.key}>
                  <dt>{f.label}</dt>
                  <dd><Badge status={v ? f.yes : f.no}>{v ? 'Yes' : 'No'}</Badge></dd>
                </div>
              )
            })}
          </dl>
          <h3>Reasons</h3>
          <ul>{r.reasons.map((x) => <li key={x}>{x}</li>)}</ul>
        </div>
      )}
    </section>
  )
}

function SendTest({ project }: { project: Project }) {
  const id = useId()
  const domains = useQuery({ queryKey: ['domains', project.id], queryFn: () => get<Domain[]>(`/domains/project/${project.id}`, project.id) })
  const verified = (domains.data ?? []).filter((d) => d.verified)
  const send = useMutation({ mutationFn: (body: Record<string, unknown>) => post<SendResult>('/v1/send', body, project.id) })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    const s = (k: string) => String(f.get(k) ?? '').trim()
    const address = `${s('local')}@${s('domain')}`
    send.mutate({
      from: s('fromName') ? { name: s('fromName'), email: address } : address,
      to: s('to'), subject: String(f.get('subject') ?? ''), body: String(f.get('body') ?? ''),
    })
  }
  const err = send.error
  const bodyErr = fieldError(err, 'body')
  const fromErr = fieldError(err, 'from')
  const result = send.data?.data.emails[0]
  return (
    <section className="card" aria-labelledby="send-title">
      <h2 id="send-title">Send a test email</h2>
      <p className="small muted">Sends one transactional email with <code>POST /v1/send</code>, as your code would. It is delivered for real and appears in <Link href="/activity">Activity</Link>.</p>
      {domains.isPending && <Loading />}
      <ErrorBox error={domains.error} />
      {domains.data && verified.length === 0 && (
        <Empty title="No verified sending domain">Mail can only be sent from a verified domain. <Link href="/domains">Add and verify one</Link>, then come back.</Empty>
      )}
      {verified.length > 0 && (
        <form onSubmit={submit} noValidate>
          <ErrorBox error={err} shown={['from', 'to', 'subject', 'body']} />
          {result && (
            <div className="alert ok" role="status">
              {result.email
                ? <>Queued for {result.contact.email}. <Link href={`/emails/${result.email}`}>Follow its delivery</Link></>
                : <>Not sent: {result.contact.email} is suppressed ({result.reason}). See <Link href="/suppressions">Suppressions</Link>.</>}
            </div>
          )}
          <div className="row" style={{ alignItems: 'flex-start', marginBottom: '.85rem' }}>
            <Field label="From name (optional)" name="fromName" placeholder="Acme" />
            <Field label="From address" name="local" defaultValue="hello" required error={fromErr} hint="The part before the @" />
            <div className="field"><span><label htmlFor={`${id}-domain`}>Sending domain</label></span>
              <select id={`${id}-domain`} name="domain" defaultValue={verified[0].domain} aria-invalid={fromErr ? true : undefined}>
                {verified.map((d) => <option key={d.id} value={d.domain}>@{d.domain}</option>)}
              </select>
            </div>
          </div>
          <Field label="To" name="to" type="email" required placeholder="you@example.com" error={fieldError(err, 'to')} />
          <Field label="Subject" name="subject" required defaultValue="A test from mailctl" error={fieldError(err, 'subject')} />
          <div className="field">
            <span><label htmlFor={`${id}-body`}>Body (HTML)</label></span>
            <textarea id={`${id}-body`} name="body" rows={6} defaultValue={'<p>Hello,</p>\n<p>This is a test sent from the mailctl dashboard.</p>'}
              aria-invalid={bodyErr ? true : undefined} aria-describedby={bodyErr ? `${id}-body-err` : undefined} />
            {bodyErr && <span id={`${id}-body-err`} className="err">{bodyErr}</span>}
          </div>
          <button type="submit" disabled={send.isPending}>{send.isPending ? 'Sending…' : 'Send test'}</button>
        </form>
      )}
    </section>
  )
}
