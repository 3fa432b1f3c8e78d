import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { canManage, del, get, type Member, patch, post, type Project, type ProjectWithSecret, type Role, type SetupState, type User } from '../../api'
import { Badge, ConfirmButton, CopyButton, Empty, ErrorBox, Field, fieldError, formatDate, FormField, Loading, PageHead } from '../../components/ui'
import { type MessageKey, t } from '../../i18n'
import { en } from '../../i18n/en'
import { ProjectPulse } from '../analytics'

/** The secret key, shown once: after creation or regeneration. */
function SecretOnce({ secret }: { secret: string }) {
  return (
    <div className="alert warn" role="status">
      <p><strong>{t('proj.copyNow')}</strong>{t('proj.shownOnce')}</p>
      <div className="secret"><code data-testid="secret-key">{secret}</code><CopyButton text={secret} label={t('proj.copySecret')} /></div>
    </div>
  )
}

export function CreateProject({ first }: { first: boolean }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const create = useMutation({
    mutationFn: (name: string) => post<ProjectWithSecret>('/users/@me/projects', { name }),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['projects'] }),
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    create.mutate(String(new FormData(e.currentTarget).get('name') ?? ''))
  }
  if (create.data) {
    return (
      <div className="stack">
        <PageHead title={t('proj.ready', { name: create.data.name })} />
        <SecretOnce secret={create.data.secretKey} />
        <div className="card">
          <p>{t('proj.publicKey1')}<code>/v1/track</code>{t('proj.publicKey2')}<code>{create.data.publicKey}</code></p>
          <button type="button" onClick={() => navigate(`/p/${create.data.id}`)}>{t('proj.continue')}</button>
        </div>
      </div>
    )
  }
  return (
    <div>
      <PageHead title={first ? t('proj.createFirst') : t('proj.new')} />
      <div className="card">
        {first && <p>{t('proj.holds')}</p>}
        <form onSubmit={submit} noValidate>
          <ErrorBox error={create.error} shown={['name']} />
          <Field label={t('proj.name')} name="name" required maxLength={100} autoFocus error={fieldError(create.error, 'name')} />
          <button type="submit" disabled={create.isPending}>{create.isPending ? t('proj.creating') : t('proj.create')}</button>
        </form>
      </div>
    </div>
  )
}

export function Overview({ project }: { project: Project }) {
  const setup = useQuery({ queryKey: ['setup', project.id], queryFn: () => get<SetupState>(`/projects/${project.id}/setup-state`) })
  return (
    <div>
      <PageHead title={project.name} />
      {project.disabled && <div className="alert error" role="alert">{t('proj.disabled')}</div>}
      {/* The checklist leads while a first step is left; once all are done the project's figures come first. */}
      {setup.data?.completed && <ProjectPulse project={project} />}
      <div className="card" style={setup.data?.completed ? { marginTop: '1rem' } : undefined}>
        <h2>{t('proj.gettingStarted')}</h2>
        {setup.isPending && <Loading />}
        <ErrorBox error={setup.error} />
        {setup.data && (
          <>
            {setup.data.completed && <p>{t('proj.allDone')}</p>}
            <ul className="checklist">
              {setup.data.steps.map((s) => <li key={s.id}><Badge status={s.done ? 'ok' : 'pending'}>{s.done ? t('proj.done') : t('proj.todo')}</Badge> {`proj.step.${s.id}` in en ? t(`proj.step.${s.id}` as MessageKey) : s.title}</li>)}
            </ul>
          </>
        )}
      </div>
      {setup.data && !setup.data.completed && <ProjectPulse project={project} />}
      <div className="card small muted" style={{ marginTop: '1rem' }}>{t('proj.footer', { role: t(`role.${project.role}`), at: formatDate(project.createdAt) })}<code>{project.id}</code></div>
    </div>
  )
}

function NotAllowed({ role, what }: { role: Role; what: string }) {
  return <div className="card"><p>{t('proj.notAllowed', { role: t(`role.${role}`), what })}</p></div>
}

/**
 * The settings form's body: an empty rate is the server's default (null); an empty sender default is none.
 * A sender default goes only when changed (an unchanged one is not checked again).
 */
export function settingsBody(f: FormData, project: Project): Record<string, unknown> {
  const rate = String(f.get('rate') ?? '').trim()
  const n = Number(rate)
  const body: Record<string, unknown> = {
    name: String(f.get('name') ?? ''), trackingEnabled: f.get('tracking') === 'on',
    // A value the API refuses (0, 2.5, text) still goes as it is: its error shows at the field.
    sendRatePerSecond: rate === '' ? null : Number.isFinite(n) ? n : rate,
  }
  for (const k of ['defaultFrom', 'defaultFromName', 'defaultReplyTo'] as const) {
    const v = String(f.get(k) ?? '').trim() || null
    if (v !== project[k]) body[k] = v
  }
  return body
}

export function SettingsPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const save = useMutation({
    mutationFn: (body: ReturnType<typeof settingsBody>) => patch<Project>(`/users/@me/projects/${project.id}`, body),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['projects'] }),
  })
  const remove = useMutation({
    mutationFn: () => del(`/users/@me/projects/${project.id}`),
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: ['projects'] }); navigate('~/app/', { replace: true }) },
  })
  if (!canManage(project.role)) return <><PageHead title={t('nav.settings')} /><NotAllowed role={project.role} what={t('proj.what.settings')} /></>
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    save.mutate(settingsBody(new FormData(e.currentTarget), project))
  }
  return (
    <div>
      <PageHead title={t('nav.settings')} />
      <form className="card" onSubmit={submit} noValidate>
        <ErrorBox error={save.error} shown={['name', 'sendRatePerSecond', 'defaultFrom', 'defaultFromName', 'defaultReplyTo']} />
        {save.isSuccess && <div className="alert ok" role="status">{t('ui.saved')}</div>}
        <Field label={t('proj.name')} name="name" defaultValue={project.name} required maxLength={100} error={fieldError(save.error, 'name')} />
        <h2>{t('proj.sending')}</h2>
        <Field label={t('proj.rate')} name="rate" type="number" min={1} step={1} inputMode="numeric"
          defaultValue={project.sendRatePerSecond ?? ''} placeholder={t('proj.rateDefault')}
          hint={t('proj.rateHint')}
          error={fieldError(save.error, 'sendRatePerSecond') && t('proj.rateError')} />
        <div className="check">
          <input id="tracking" name="tracking" type="checkbox" defaultChecked={project.trackingEnabled} aria-describedby="tracking-hint" />
          <label htmlFor="tracking">{t('proj.tracking')}</label>
        </div>
        <p id="tracking-hint" className="small muted">{t('proj.trackingHint')}</p>
        <h2>{t('proj.senderDefaults')}</h2>
        <p className="small muted">{t('proj.senderText')}</p>
        <div className="row top">
          <Field label={t('proj.fromAddress')} name="defaultFrom" type="email" defaultValue={project.defaultFrom ?? ''} placeholder="news@your-domain.com"
            hint={t('proj.fromHint')} error={fieldError(save.error, 'defaultFrom')} />
          <Field label={t('proj.fromName')} name="defaultFromName" defaultValue={project.defaultFromName ?? ''} placeholder="Acme" maxLength={200} error={fieldError(save.error, 'defaultFromName')} />
          <Field label={t('proj.replyTo')} name="defaultReplyTo" type="email" defaultValue={project.defaultReplyTo ?? ''} placeholder="support@your-domain.com"
            hint={t('proj.replyToHint')} error={fieldError(save.error, 'defaultReplyTo')} />
        </div>
        <button type="submit" disabled={save.isPending}>{save.isPending ? t('ui.saving') : t('ui.save')}</button>
      </form>
      <div className="card">
        <h2>{t('proj.webhooks')}</h2>
        <p className="muted">{t('proj.webhooksText')}<Link href="/webhooks">{t('proj.manageWebhooks')}</Link></p>
      </div>
      {project.role === 'OWNER' && (
        <div className="card">
          <h2>{t('proj.deleteTitle')}</h2>
          <p className="muted">{t('proj.deleteText')}</p>
          <ErrorBox error={remove.error} />
          <ConfirmButton label={t('proj.delete')} confirm={t('proj.deleteConfirm', { name: project.name })} onConfirm={() => remove.mutate()} busy={remove.isPending} />
        </div>
      )}
    </div>
  )
}

export function KeysPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const rotate = useMutation({
    mutationFn: () => post<ProjectWithSecret>(`/users/@me/projects/${project.id}/regenerate-keys`),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['projects'] }),
  })
  if (!canManage(project.role)) return <><PageHead title={t('nav.keys')} /><NotAllowed role={project.role} what={t('proj.what.keys')} /></>
  return (
    <div>
      <PageHead title={t('nav.keys')} />
      {rotate.data && <SecretOnce secret={rotate.data.secretKey} />}
      <div className="card">
        <h2>{t('keys.public')}</h2>
        <p className="muted small">{t('keys.publicText1')}<code>POST /v1/track</code>{t('keys.publicText2')}</p>
        <div className="secret"><code data-testid="public-key">{rotate.data?.publicKey ?? project.publicKey}</code><CopyButton text={rotate.data?.publicKey ?? project.publicKey} label={t('keys.copyPublic')} /></div>
      </div>
      <div className="card">
        <h2>{t('keys.secret')}</h2>
        <p className="muted small">{t('keys.secretText1')}<code>Authorization: Bearer sk_…</code>{t('keys.secretText2')}</p>
        <ErrorBox error={rotate.error} />
        <ConfirmButton label={t('keys.regenerate')} confirm={t('keys.regenerateConfirm')} onConfirm={() => rotate.mutate()} busy={rotate.isPending} />
      </div>
    </div>
  )
}

export function MembersPage({ project, user }: { project: Project; user: User }) {
  const qc = useQueryClient()
  const key = ['members', project.id]
  const team = useQuery({ queryKey: key, queryFn: () => get<Member[]>(`/projects/${project.id}/members`) })
  const done = () => qc.invalidateQueries({ queryKey: key })
  const invite = useMutation({ mutationFn: (body: { email: string; role: string }) => post<Member>(`/projects/${project.id}/members`, body), onSuccess: done })
  const change = useMutation({
    mutationFn: ({ id, role }: { id: string; role: Role }) => patch<Member>(`/projects/${project.id}/members/${id}`, { role }),
    onSuccess: async () => { await done(); await qc.invalidateQueries({ queryKey: ['projects'] }) },
  })
  const remove = useMutation({ mutationFn: (id: string) => del(`/projects/${project.id}/members/${id}`), onSuccess: done })
  const [formKey, setFormKey] = useState(0)
  const manage = canManage(project.role)
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    invite.mutate({ email: String(f.get('email') ?? ''), role: String(f.get('role') ?? 'MEMBER') }, { onSuccess: () => setFormKey((k) => k + 1) })
  }
  const roles: Role[] = project.role === 'OWNER' ? ['OWNER', 'ADMIN', 'MEMBER'] : ['ADMIN', 'MEMBER']
  return (
    <div>
      <PageHead title={t('nav.members')} />
      {manage && (
        <form key={formKey} className="card" onSubmit={submit} noValidate>
          <h2>{t('team.invite')}</h2>
          <ErrorBox error={invite.error} shown={['email']} />
          <div className="row">
            <Field label={t('team.email')} name="email" type="email" required error={fieldError(invite.error, 'email')} />
            <FormField label={t('team.role')} id="invite-role">
              {(c) => <select {...c} name="role" defaultValue="MEMBER"><option value="MEMBER">{t('team.member')}</option><option value="ADMIN">{t('team.admin')}</option></select>}
            </FormField>
            <button type="submit" disabled={invite.isPending}>{t('team.inviteButton')}</button>
          </div>
          <p className="hint small muted">{t('team.inviteHint')}</p>
        </form>
      )}
      <div className="card">
        <ErrorBox error={change.error ?? remove.error} />
        {team.isPending && <Loading />}
        <ErrorBox error={team.error} />
        {team.data && team.data.length === 0 && <Empty title={t('team.none')}>{t('team.noneText')}</Empty>}
        {team.data && team.data.length > 0 && (
          <div className="table-wrap"><table>
            <thead><tr><th scope="col">{t('team.email')}</th><th scope="col">{t('team.role')}</th><th scope="col">{t('team.status')}</th><th scope="col"><span className="skip">{t('team.actions')}</span></th></tr></thead>
            <tbody>
              {team.data.map((m) => {
                const self = m.userId === user.id
                const editable = manage && m.role !== 'OWNER' && m.status === 'active'
                return (
                  <tr key={m.id}>
                    <td>{m.email}{self && <span className="muted">{t('team.you')}</span>}</td>
                    <td>
                      {editable ? (
                        <select aria-label={t('team.roleOf', { email: m.email })} value={m.role} onChange={(e) => change.mutate({ id: m.id, role: e.target.value as Role })}>
                          {roles.map((r) => <option key={r} value={r}>{t(`role.${r}`)}</option>)}
                        </select>
                      ) : t(`role.${m.role}`)}
                    </td>
                    <td><Badge status={m.status} /></td>
                    <td>{m.role !== 'OWNER' && (manage || self) && (
                      <ConfirmButton label={self ? t('team.leave') : m.status === 'invited' ? t('team.cancelInvite') : t('team.remove')} confirm={self ? t('team.leaveConfirm') : t('team.removeConfirm', { email: m.email })} onConfirm={() => remove.mutate(m.id)} />
                    )}</td>
                  </tr>
                )
              })}
            </tbody>
          </table></div>
        )}
      </div>
      {!manage && <p className="muted small">{t('team.onlyManagers')}<Link href="/">{t('shell.toOverview')}</Link></p>}
    </div>
  )
}
