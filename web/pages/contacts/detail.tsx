import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { type Contact, del, get, patch, type Project } from '../../api'
import { Badge, ConfirmButton, Empty, ErrorBox, Field, fieldError, formatDate, FormField, Loading, PageHead } from '../../components/ui'
import { t } from '../../i18n'

interface EventRow { id: string; name: string; data: Record<string, unknown>; createdAt: string }
interface EventPage { data: EventRow[]; cursor: string | null; hasMore: boolean; total: number }

type Kind = 'text' | 'number' | 'boolean' | 'json'
interface Row { key: string; kind: Kind; value: string; original?: string }

function kindOf(v: unknown): Kind {
  if (typeof v === 'number') return 'number'
  if (typeof v === 'boolean') return 'boolean'
  if (typeof v === 'string') return 'text'
  return 'json'
}

function rowsOf(data: Record<string, unknown> | null): Row[] {
  return Object.entries(data ?? {}).map(([key, v]) => {
    const kind = kindOf(v)
    return { key, kind, original: key, value: kind === 'json' ? JSON.stringify(v) : String(v) }
  })
}

/** A row's typed value; throws with a person's message when it does not parse. */
function typedValue(r: Row): unknown {
  if (r.kind === 'number') {
    const n = Number(r.value)
    if (r.value.trim() === '' || !Number.isFinite(n)) throw new Error(t('contact.notNumber', { key: r.key, value: r.value }))
    return n
  }
  if (r.kind === 'boolean') return r.value === 'true'
  if (r.kind === 'json') {
    try { return JSON.parse(r.value) } catch { throw new Error(t('contact.notJson', { key: r.key })) }
  }
  return r.value
}

export function ContactDetail({ project, id }: { project: Project; id: string }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const contact = useQuery({ queryKey: ['contact', project.id, id], queryFn: () => get<Contact>(`/contacts/${id}`, project.id) })
  const events = useQuery({ queryKey: ['contact-events', project.id, id], queryFn: () => get<EventPage>(`/events/contact/${id}?limit=50`, project.id) })
  const saved = (c: Contact) => {
    qc.setQueryData(['contact', project.id, id], c)
    qc.invalidateQueries({ queryKey: ['contacts', project.id] })
    qc.invalidateQueries({ queryKey: ['contact-events', project.id, id] })
  }
  const update = useMutation({ mutationFn: (body: Record<string, unknown>) => patch<Contact>(`/contacts/${id}`, body, project.id), onSuccess: saved })
  const toggle = useMutation({ mutationFn: (subscribed: boolean) => patch<Contact>(`/contacts/${id}`, { subscribed }, project.id), onSuccess: saved })
  const remove = useMutation({
    mutationFn: () => del(`/contacts/${id}`, project.id),
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: ['contacts', project.id] }); navigate('/contacts') },
  })
  if (contact.isPending) return <Loading />
  if (contact.error) return <><ErrorBox error={contact.error} /><Link href="/contacts">{t('contact.all')}</Link></>
  const c = contact.data
  return (
    <div>
      <PageHead title={c.email}>
        <Badge status={c.subscribed ? 'ok' : 'failed'}>{c.subscribed ? t('contacts.subscribed') : t('contacts.unsubscribed')}</Badge>
        <button type="button" className="secondary" disabled={toggle.isPending} onClick={() => toggle.mutate(!c.subscribed)}>
          {c.subscribed ? t('contact.unsubscribe') : t('contact.subscribe')}
        </button>
        <ConfirmButton label={t('contact.delete')} confirm={t('contact.deleteConfirm')} onConfirm={() => remove.mutate()} busy={remove.isPending} />
      </PageHead>
      <ErrorBox error={remove.error ?? toggle.error} />
      <p className="small muted"><Link href="/contacts">← {t('contact.all')}</Link> · <Link href={`/activity?contact=${encodeURIComponent(c.email)}`}>{t('contact.activity')}</Link> · {t('contact.createdUpdated', { created: formatDate(c.createdAt), updated: formatDate(c.updatedAt) })}</p>
      <EditContact key={c.updatedAt} contact={c} save={update} />
      <div className="card">
        <h2>{t('contact.timeline')}</h2>
        {events.isPending && <Loading />}
        <ErrorBox error={events.error} />
        {events.data?.data.length === 0 && <Empty title={t('contact.noEvents')}>{t('contact.noEventsText1')}<code>POST /v1/track</code>{t('contact.noEventsText2')}</Empty>}
        {events.data && events.data.data.length > 0 && (
          <div className="table-wrap"><table>
            <thead><tr><th scope="col">{t('contact.event')}</th><th scope="col">{t('campaigns.when')}</th><th scope="col">{t('contact.data')}</th></tr></thead>
            <tbody>{events.data.data.map((e) => (
              <tr key={e.id}><td>{typeof e.data.emailId === 'string' ? <Link href={`/emails/${e.data.emailId}`}><code>{e.name}</code></Link> : <code>{e.name}</code>}</td><td>{formatDate(e.createdAt)}</td><td className="value"><code>{Object.keys(e.data).length ? JSON.stringify(e.data) : ''}</code></td></tr>
            ))}</tbody>
          </table></div>
        )}
      </div>
    </div>
  )
}

type Save = ReturnType<typeof useMutation<Contact, Error, Record<string, unknown>>>

function EditContact({ contact, save }: { contact: Contact; save: Save }) {
  const [rows, setRows] = useState<Row[]>(() => rowsOf(contact.data))
  // A value that does not fit its type, found before sending: shown on that row's value.
  const [local, setLocal] = useState<{ row: number; message: string } | null>(null)
  const set = (i: number, patchRow: Partial<Row>) => setRows((rs) => rs.map((r, j) => (j === i ? { ...r, ...patchRow } : r)))
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    setLocal(null)
    const email = String(new FormData(e.currentTarget).get('email') ?? '').trim()
    const data: Record<string, unknown> = {}
    for (const [i, r] of rows.entries()) {
      if (!r.key.trim()) continue
      try { data[r.key.trim()] = typedValue(r) } catch (err) {
        setLocal({ row: i, message: (err as Error).message })
        return
      }
    }
    // A field removed or renamed is deleted with null (docs/decisions.md, Contact data).
    for (const k of Object.keys(contact.data ?? {})) if (!(k in data)) data[k] = null
    save.mutate({ ...(email !== contact.email ? { email } : {}), data })
  }
  return (
    <form className="card" onSubmit={submit} noValidate>
      <h2>{t('contact.details')}</h2>
      {local && <div className="alert error" role="alert">{t('ui.checkFields', { count: 1 })}</div>}
      <ErrorBox error={save.error} shown={['email', 'data']} />
      {save.isSuccess && <div className="alert ok" role="status">{t('ui.saved')}</div>}
      <Field label={t('contacts.email')} name="email" type="email" defaultValue={contact.email} required error={fieldError(save.error, 'email')} />
      <h2>{t('contact.dataFields')}</h2>
      {rows.length === 0 && <p className="muted small">{t('contact.noFields')}</p>}
      {rows.map((r, i) => (
        <div className="row" key={r.original ?? `new-${i}`} style={{ marginBottom: '.6rem' }}>
          <Field label={t('contact.field')} value={r.key} onChange={(e) => set(i, { key: e.target.value })} />
          <FormField label={t('contact.type')} id={`kind-${i}`}>
            {(c) => (
              <select {...c} value={r.kind} onChange={(e) => set(i, { kind: e.target.value as Kind, value: e.target.value === 'boolean' ? 'true' : r.value })}>
                <option value="text">{t('contact.kind.text')}</option><option value="number">{t('contact.kind.number')}</option><option value="boolean">{t('contact.kind.boolean')}</option><option value="json">JSON</option>
              </select>
            )}
          </FormField>
          {r.kind === 'boolean' ? (
            <FormField label={t('contact.value')} id={`val-${i}`}>
              {(c) => <select {...c} value={r.value} onChange={(e) => set(i, { value: e.target.value })}><option value="true">{t('contact.yes')}</option><option value="false">{t('contact.no')}</option></select>}
            </FormField>
          ) : (
            <Field label={t('contact.value')} value={r.value} inputMode={r.kind === 'number' ? 'decimal' : undefined} onChange={(e) => { set(i, { value: e.target.value }); if (local?.row === i) setLocal(null) }}
              error={local?.row === i ? local.message : fieldError(save.error, `data.${r.key.trim()}`)} />
          )}
          <button type="button" className="secondary" onClick={() => setRows((rs) => rs.filter((_, j) => j !== i))}>{t('contact.removeField')}</button>
        </div>
      ))}
      <div className="row">
        <button type="button" className="secondary" onClick={() => setRows((rs) => [...rs, { key: '', kind: 'text', value: '' }])}>{t('contact.addField')}</button>
        <button type="submit" disabled={save.isPending}>{save.isPending ? t('ui.saving') : t('ui.save')}</button>
      </div>
    </form>
  )
}
