import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { canManage, del, get, type Member, patch, post, type Project, type ProjectWithSecret, type Role, type SetupState, type User } from '../../api'
import { Badge, ConfirmButton, CopyButton, Empty, ErrorBox, Field, fieldError, formatDate, Loading, PageHead } from '../../components/ui'
import { ProjectPulse } from '../analytics'

/** The secret key, shown once: after creation or regeneration. */
function SecretOnce({ secret }: { secret: string }) {
  return (
    <div className="alert warn" role="status">
      <p><strong>Copy your secret key now.</strong> It is shown only once; mailctl keeps only its hash.</p>
      <div className="secret"><code data-testid="secret-key">{secret}</code><CopyButton text={secret} label="Copy secret key" /></div>
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
        <PageHead title={`Project “${create.data.name}” is ready`} />
        <SecretOnce secret={create.data.secretKey} />
        <div className="card">
          <p>Public key (for <code>/v1/track</code> from web pages): <code>{create.data.publicKey}</code></p>
          <button type="button" onClick={() => navigate(`/p/${create.data.id}`)}>Continue to the project</button>
        </div>
      </div>
    )
  }
  return (
    <div>
      <PageHead title={first ? 'Create your first project' : 'New project'} />
      <div className="card">
        {first && <p>A project holds contacts, domains, templates and mail, with its own API keys and team.</p>}
        <form onSubmit={submit} noValidate>
          <ErrorBox error={create.error} shown={['name']} />
          <Field label="Project name" name="name" required maxLength={100} autoFocus error={fieldError(create.error, 'name')} />
          <button type="submit" disabled={create.isPending}>{create.isPending ? 'Creating…' : 'Create project'}</button>
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
      {project.disabled && <div className="alert error" role="alert">This project is disabled: its API keys are refused and changes are not accepted.</div>}
      {/* The checklist leads while a first step is left; once all are done the project's figures come first. */}
      {setup.data?.completed && <ProjectPulse project={project} />}
      <div className="card" style={setup.data?.completed ? { marginTop: '1rem' } : undefined}>
        <h2>Getting started</h2>
        {setup.isPending && <Loading />}
        <ErrorBox error={setup.error} />
        {setup.data && (
          <>
            {setup.data.completed && <p>Every first step is done.</p>}
            <ul className="checklist">
              {setup.data.steps.map((s) => <li key={s.id}><Badge status={s.done ? 'ok' : 'pending'}>{s.done ? 'Done' : 'To do'}</Badge> {s.title}</li>)}
            </ul>
          </>
        )}
      </div>
      {setup.data && !setup.data.completed && <ProjectPulse project={project} />}
      <div className="card small muted" style={{ marginTop: '1rem' }}>Your role: {project.role} · created {formatDate(project.createdAt)} · id <code>{project.id}</code></div>
    </div>
  )
}

function NotAllowed({ role, what }: { role: Role; what: string }) {
  return <div className="card"><p>Your role ({role}) does not allow you to {what}. Ask an owner or admin of this project.</p></div>
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
  if (!canManage(project.role)) return <><PageHead title="Settings" /><NotAllowed role={project.role} what="change project settings" /></>
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    save.mutate(settingsBody(new FormData(e.currentTarget), project))
  }
  return (
    <div>
      <PageHead title="Settings" />
      <form className="card" onSubmit={submit} noValidate>
        <ErrorBox error={save.error} shown={['name', 'sendRatePerSecond', 'defaultFrom', 'defaultFromName', 'defaultReplyTo']} />
        {save.isSuccess && <div className="alert ok" role="status">Saved.</div>}
        <Field label="Project name" name="name" defaultValue={project.name} required maxLength={100} error={fieldError(save.error, 'name')} />
        <h2>Sending</h2>
        <Field label="Campaign sending rate (emails per second)" name="rate" type="number" min={1} step={1} inputMode="numeric"
          defaultValue={project.sendRatePerSecond ?? ''} placeholder="Server default"
          hint="Campaigns of this project go out at most this fast; transactional and workflow emails are never held back. Leave it empty for the server's default."
          error={fieldError(save.error, 'sendRatePerSecond') && 'A whole number from 1 to 1,000,000, or empty for the server’s default.'} />
        <div className="check">
          <input id="tracking" name="tracking" type="checkbox" defaultChecked={project.trackingEnabled} aria-describedby="tracking-hint" />
          <label htmlFor="tracking">Track opens and clicks in this project's mail</label>
        </div>
        <p id="tracking-hint" className="small muted">Adds an invisible image and rewrites links, so reports can count opens and clicks.</p>
        <h2>Sender defaults</h2>
        <p className="small muted">Filled in for each new template and campaign; you can still change them there.</p>
        <div className="row top">
          <Field label="From address" name="defaultFrom" type="email" defaultValue={project.defaultFrom ?? ''} placeholder="news@your-domain.com"
            hint="On a verified domain of this project" error={fieldError(save.error, 'defaultFrom')} />
          <Field label="From name" name="defaultFromName" defaultValue={project.defaultFromName ?? ''} placeholder="Acme" maxLength={200} error={fieldError(save.error, 'defaultFromName')} />
          <Field label="Reply-to address" name="defaultReplyTo" type="email" defaultValue={project.defaultReplyTo ?? ''} placeholder="support@your-domain.com"
            hint="Where replies go; empty: to the From address" error={fieldError(save.error, 'defaultReplyTo')} />
        </div>
        <button type="submit" disabled={save.isPending}>{save.isPending ? 'Saving…' : 'Save'}</button>
      </form>
      <div className="card">
        <h2>Webhooks</h2>
        <p className="muted">Send this project's events (bounces, opens, unsubscribes, your tracked events) to your own server. <Link href="/webhooks">Manage webhooks</Link></p>
      </div>
      {project.role === 'OWNER' && (
        <div className="card">
          <h2>Delete the project</h2>
          <p className="muted">Deletes its contacts, domains, templates, mail and keys, for good.</p>
          <ErrorBox error={remove.error} />
          <ConfirmButton label="Delete project" confirm={`Delete “${project.name}” forever?`} onConfirm={() => remove.mutate()} busy={remove.isPending} />
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
  if (!canManage(project.role)) return <><PageHead title="API keys" /><NotAllowed role={project.role} what="see or manage API keys" /></>
  return (
    <div>
      <PageHead title="API keys" />
      {rotate.data && <SecretOnce secret={rotate.data.secretKey} />}
      <div className="card">
        <h2>Public key</h2>
        <p className="muted small">Only for <code>POST /v1/track</code>: safe to put in a web page.</p>
        <div className="secret"><code data-testid="public-key">{rotate.data?.publicKey ?? project.publicKey}</code><CopyButton text={rotate.data?.publicKey ?? project.publicKey} label="Copy public key" /></div>
      </div>
      <div className="card">
        <h2>Secret key</h2>
        <p className="muted small">For everything else, in <code>Authorization: Bearer sk_…</code>. It was shown once, when the project was created or its keys were last regenerated. Lost it? Regenerate both keys: the old ones stop working at once.</p>
        <ErrorBox error={rotate.error} />
        <ConfirmButton label="Regenerate keys" confirm="The current keys stop working immediately. Continue?" onConfirm={() => rotate.mutate()} busy={rotate.isPending} />
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
      <PageHead title="Members" />
      {manage && (
        <form key={formKey} className="card" onSubmit={submit} noValidate>
          <h2>Invite someone</h2>
          <ErrorBox error={invite.error} shown={['email']} />
          <div className="row">
            <Field label="Email" name="email" type="email" required error={fieldError(invite.error, 'email')} />
            <div className="field"><span><label htmlFor="invite-role">Role</label></span>
              <select id="invite-role" name="role" defaultValue="MEMBER"><option value="MEMBER">Member</option><option value="ADMIN">Admin</option></select>
            </div>
            <button type="submit" disabled={invite.isPending}>Invite</button>
          </div>
          <p className="hint small muted">The address gets an email with a link; it joins only when its owner accepts. Pending invitations are listed below until then.</p>
        </form>
      )}
      <div className="card">
        <ErrorBox error={change.error ?? remove.error} />
        {team.isPending && <Loading />}
        <ErrorBox error={team.error} />
        {team.data && team.data.length === 0 && <Empty title="No members yet">Invite your team above.</Empty>}
        {team.data && team.data.length > 0 && (
          <div className="table-wrap"><table>
            <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col"><span className="skip">Actions</span></th></tr></thead>
            <tbody>
              {team.data.map((m) => {
                const self = m.userId === user.id
                const editable = manage && m.role !== 'OWNER' && m.status === 'active'
                return (
                  <tr key={m.id}>
                    <td>{m.email}{self && <span className="muted"> (you)</span>}</td>
                    <td>
                      {editable ? (
                        <select aria-label={`Role of ${m.email}`} value={m.role} onChange={(e) => change.mutate({ id: m.id, role: e.target.value as Role })}>
                          {roles.map((r) => <option key={r} value={r}>{r}</option>)}
                        </select>
                      ) : m.role}
                    </td>
                    <td><Badge status={m.status} /></td>
                    <td>{m.role !== 'OWNER' && (manage || self) && (
                      <ConfirmButton label={self ? 'Leave' : m.status === 'invited' ? 'Cancel invitation' : 'Remove'} confirm={self ? 'Leave this project?' : `Remove ${m.email}?`} onConfirm={() => remove.mutate(m.id)} />
                    )}</td>
                  </tr>
                )
              })}
            </tbody>
          </table></div>
        )}
      </div>
      {!manage && <p className="muted small">Only owners and admins manage the team. <Link href="/">Back to the overview</Link></p>}
    </div>
  )
}
