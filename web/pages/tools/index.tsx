import { useMutation, useQuery } from '@tanstack/react-query'
import { type FormEvent, useId, useState } from 'react'
import { Link } from 'wouter'
import { type Answer, type Domain, get, post, type Project } from '../../api'
import { Badge, Empty, ErrorBox, Field, fieldError, FormField, Loading, PageHead } from '../../components/ui'
import { type MessageKey, t } from '../../i18n'

type VerifyResult = Answer<'/v1/verify', 'post'>['data']
type SendResult = Answer<'/v1/send', 'post'>

/**
 * The flags of a verify result in a person's words, with the badge each answer gets: ok (speaks for the
 * address), failed (a reason not to send), pending (worth a look), '' (neither).
 */
const FLAGS: Array<{ key: keyof VerifyResult; yes: string; no: string }> = [
  { key: 'domainExists', yes: 'ok', no: 'failed' },
  { key: 'hasMxRecords', yes: 'ok', no: 'failed' },
  { key: 'hasWebsite', yes: 'ok', no: 'pending' },
  { key: 'isDisposable', yes: 'failed', no: 'ok' },
  { key: 'isTypo', yes: 'failed', no: 'ok' },
  { key: 'isAlias', yes: 'pending', no: 'ok' },
  { key: 'isPlusAddressed', yes: 'pending', no: '' },
  { key: 'isPersonalEmail', yes: '', no: '' },
]

export function ToolsPage({ project }: { project: Project }) {
  return (
    <div>
      <PageHead title={t('nav.tools')} />
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
      <h2 id="verify-title">{t('tools.verifyTitle')}</h2>
      <p className="small muted">{t('tools.verifyText1')}<code>POST /v1/verify</code>{t('tools.verifyText2')}</p>
      <form onSubmit={submit} noValidate>
        <ErrorBox error={verify.error} shown={['email']} />
        <div className="row">
          <Field label={t('tools.emailToVerify')} type="email" value={email} onChange={(e) => setEmail(e.target.value)} placeholder="someone@example.com" error={fieldError(verify.error, 'email')} />
          <button type="submit" disabled={verify.isPending}>{verify.isPending ? t('tools.verifying') : t('tools.verify')}</button>
        </div>
      </form>
      {verify.isPending && <Loading label={t('tools.lookingUp')} />}
      {r && (
        <div aria-live="polite" className="stack" style={{ marginTop: '1rem' }}>
          <div className={`alert ${r.valid ? 'ok' : 'error'}`} role="status">
            <strong>{r.email}</strong>: {r.valid ? t('tools.deliverable') : t('tools.notDeliverable')}
            {r.suggestedEmail && (
              <>{t('tools.didYouMean')}<button type="button" className="link" onClick={() => { setEmail(r.suggestedEmail ?? ''); verify.mutate(r.suggestedEmail ?? '') }}>{r.suggestedEmail}</button>?</>
            )}
          </div>
          <dl className="result">
            {FLAGS.map((f) => {
              const v = r[f.key] === true
              return (
                <div key={f.key}>
                  <dt>{t(`tools.flag.${f.key}` as MessageKey)}</dt>
                  <dd><Badge status={v ? f.yes : f.no}>{v ? t('tools.yes') : t('tools.no')}</Badge></dd>
                </div>
              )
            })}
          </dl>
          <h3>{t('tools.reasons')}</h3>
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
      <h2 id="send-title">{t('tools.sendTitle')}</h2>
      <p className="small muted">{t('tools.sendText1')}<code>POST /v1/send</code>{t('tools.sendText2')}<Link href="/activity">{t('nav.activity')}</Link>.</p>
      {domains.isPending && <Loading />}
      <ErrorBox error={domains.error} />
      {domains.data && verified.length === 0 && (
        <Empty title={t('tools.noDomain')}>{t('tools.noDomainText1')}<Link href="/domains">{t('tools.noDomainLink')}</Link>{t('tools.noDomainText2')}</Empty>
      )}
      {verified.length > 0 && (
        <form onSubmit={submit} noValidate>
          <ErrorBox error={err} shown={['from', 'to', 'subject', 'body']} />
          {result && (
            <div className="alert ok" role="status">
              {result.email
                ? <>{t('tools.queued', { email: result.contact.email })}<Link href={`/emails/${result.email}`}>{t('tools.follow')}</Link></>
                : <>{t('tools.suppressed', { email: result.contact.email, reason: result.reason ?? '' })}<Link href="/suppressions">{t('nav.suppressions')}</Link>.</>}
            </div>
          )}
          <div className="row" style={{ alignItems: 'flex-start', marginBottom: '.85rem' }}>
            <Field label={t('tools.fromName')} name="fromName" placeholder="Acme" />
            <Field label={t('tools.fromAddress')} name="local" defaultValue="hello" required error={fromErr} hint={t('tools.fromHint')} />
            <FormField label={t('tools.sendingDomain')} id={`${id}-domain`} invalid={!!fromErr}>
              {(c) => (
                <select {...c} name="domain" defaultValue={verified[0].domain}>
                  {verified.map((d) => <option key={d.id} value={d.domain}>@{d.domain}</option>)}
                </select>
              )}
            </FormField>
          </div>
          <Field label={t('tools.to')} name="to" type="email" required placeholder="you@example.com" error={fieldError(err, 'to')} />
          <Field label={t('tools.subject')} name="subject" required defaultValue={t('tools.subjectDefault')} error={fieldError(err, 'subject')} />
          <FormField label={t('tools.body')} id={`${id}-body`} error={bodyErr}>
            {(c) => <textarea {...c} name="body" rows={6} defaultValue={`<p>${t('tools.bodyDefault')}</p>\n<p>${t('tools.bodyDefault2')}</p>`} />}
          </FormField>
          <button type="submit" disabled={send.isPending}>{send.isPending ? t('tools.sending') : t('tools.send')}</button>
        </form>
      )}
    </section>
  )
}
