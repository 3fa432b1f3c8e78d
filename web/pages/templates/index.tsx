import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { type Answer, del, type Narrowed, get, patch, post, type Project } from '../../api'
import { EmailEditor, type EditorValue } from '../../components/email-editor'
import { STARTER_NAMES } from '../../editor/catalogue'
import { ConfirmButton, Empty, ErrorBox, Field, fieldError, formatDate, FormField, Loading, PageHead, Pager } from '../../components/ui'
import { t } from '../../i18n'

/** A template; the document does not describe a design, the editor's JSON object. */
type Template = Narrowed<Answer<'/templates/{id}'>, { design: Record<string, unknown> | null }>
type TemplateList = Answer<'/templates'>

export function TemplatesPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const [page, setPage] = useState(1)
  const list = useQuery({ queryKey: ['templates', project.id, page], queryFn: () => get<TemplateList>(`/templates?page=${page}&pageSize=25`, project.id) })
  const create = useMutation({
    // The project's sender defaults (settings) come with a new template: its From is in the form.
    mutationFn: ({ start, ...body }: Record<string, string>) => post<Template>('/templates', {
      ...body, body: '<p>Hello {{name}},</p>\n<p></p>',
      ...(project.defaultFromName ? { fromName: project.defaultFromName } : {}), ...(project.defaultReplyTo ? { replyTo: project.defaultReplyTo } : {}),
    }, project.id).then((t) => ({ t, start })),
    // The editor opens the chosen starter on the new template (its design is saved with the first Save).
    onSuccess: async ({ t, start }) => { await qc.invalidateQueries({ queryKey: ['templates', project.id] }); navigate(`/templates/${t.id}${start === 'html' ? '' : `?start=${start}`}`) },
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    create.mutate({ name: String(f.get('name') ?? ''), subject: String(f.get('subject') ?? ''), from: String(f.get('from') ?? ''), type: String(f.get('type') ?? 'MARKETING'), start: String(f.get('start') ?? 'blank') })
  }
  return (
    <div>
      <PageHead title={t('nav.templates')} />
      <form className="card" onSubmit={submit} noValidate>
        <h2>{t('templates.new')}</h2>
        <ErrorBox error={create.error} shown={['name', 'subject', 'from']} />
        <div className="row">
          <Field label={t('campaigns.name')} name="name" required error={fieldError(create.error, 'name')} />
          <Field label={t('compose.subject')} name="subject" required error={fieldError(create.error, 'subject')} />
          <Field label={t('templates.from')} name="from" type="email" placeholder={t('templates.fromPlaceholder')} hint={t('templates.fromHint')} required defaultValue={project.defaultFrom ?? ''} error={fieldError(create.error, 'from')} />
          <FormField label={t('contact.type')} id="tpl-type">
            {(c) => <select {...c} name="type" defaultValue="MARKETING"><option value="MARKETING">{t('templates.marketing')}</option><option value="TRANSACTIONAL">{t('compose.transactional')}</option><option value="HEADLESS">{t('compose.headless')}</option></select>}
          </FormField>
          <FormField label={t('templates.startFrom')} id="tpl-start">
            {(c) => (
              <select {...c} name="start" defaultValue="blank">
                {STARTER_NAMES.map((s) => <option key={s.id} value={s.id}>{t(s.label)}</option>)}
                <option value="html">{t('templates.html')}</option>
              </select>
            )}
          </FormField>
          <button type="submit" disabled={create.isPending}>{t('templates.create')}</button>
        </div>
      </form>
      <div className="card">
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data?.data.length === 0 && <Empty title={t('templates.none')}>{t('templates.noneText')}</Empty>}
        {list.data && list.data.data.length > 0 && (
          <>
            <div className="table-wrap"><table>
              <thead><tr><th scope="col">{t('campaigns.name')}</th><th scope="col">{t('compose.subject')}</th><th scope="col">{t('contact.type')}</th><th scope="col">{t('templates.updated')}</th></tr></thead>
              <tbody>{list.data.data.map((t) => (
                <tr key={t.id}><td><Link href={`/templates/${t.id}`}>{t.name}</Link></td><td>{t.subject}</td><td>{t.type}</td><td>{formatDate(t.updatedAt)}</td></tr>
              ))}</tbody>
            </table></div>
            <Pager where={t('ui.pageOf', { page, pages: list.data.totalPages })} hasPrev={page > 1} hasNext={page < list.data.totalPages}
              onPrev={() => setPage((p) => p - 1)} onNext={() => setPage((p) => p + 1)} />
          </>
        )}
      </div>
    </div>
  )
}

export function TemplateEditor({ project, id }: { project: Project; id: string }) {
  const tpl = useQuery({ queryKey: ['template', project.id, id], queryFn: () => get<Template>(`/templates/${id}`, project.id) })
  if (tpl.isPending) return <Loading />
  if (tpl.error) return <><ErrorBox error={tpl.error} /><Link href="/templates">{t('templates.all')}</Link></>
  return <Editor key={tpl.data.id} project={project} tpl={tpl.data} />
}

function Editor({ project, tpl }: { project: Project; tpl: Template }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const [saved] = useState<EditorValue>({ body: tpl.body, design: tpl.design })
  const [content, setContent] = useState<EditorValue>(saved)
  const [subject, setSubject] = useState(tpl.subject)
  const [preheader, setPreheader] = useState(tpl.preheader ?? '')
  const save = useMutation({
    mutationFn: (b: Record<string, unknown>) => patch<Template>(`/templates/${tpl.id}`, b, project.id),
    onSuccess: (t) => { qc.setQueryData(['template', project.id, tpl.id], t); qc.invalidateQueries({ queryKey: ['templates', project.id] }) },
  })
  const duplicate = useMutation({
    mutationFn: () => post<Template>(`/templates/${tpl.id}/duplicate`, {}, project.id),
    onSuccess: async (t) => { await qc.invalidateQueries({ queryKey: ['templates', project.id] }); navigate(`/templates/${t.id}`) },
  })
  const remove = useMutation({
    mutationFn: () => del(`/templates/${tpl.id}`, project.id),
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: ['templates', project.id] }); navigate('/templates') },
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    save.mutate({ name: String(f.get('name') ?? ''), subject, preheader: preheader.trim() || null, from: String(f.get('from') ?? ''), body: content.body, design: content.design })
  }
  return (
    <div>
      <PageHead title={tpl.name}>
        <button type="button" className="secondary" onClick={() => duplicate.mutate()} disabled={duplicate.isPending}>{t('campaign.duplicate')}</button>
        <ConfirmButton label={t('templates.delete')} confirm={t('templates.deleteConfirm')} onConfirm={() => remove.mutate()} busy={remove.isPending} />
      </PageHead>
      <ErrorBox error={duplicate.error ?? remove.error} />
      <p className="small muted"><Link href="/templates">← {t('templates.all')}</Link> · {tpl.type} · {t('templates.updatedAt', { at: formatDate(tpl.updatedAt) })}</p>
      <form className="card" onSubmit={submit} noValidate>
        <ErrorBox error={save.error} shown={['name', 'subject', 'preheader', 'from', 'body', 'design']} />
        {save.isSuccess && <div className="alert ok" role="status">{t('ui.saved')}</div>}
        <div className="row">
          <Field label={t('campaigns.name')} name="name" defaultValue={tpl.name} error={fieldError(save.error, 'name')} />
          <Field label={t('templates.from')} name="from" type="email" defaultValue={tpl.from} error={fieldError(save.error, 'from')} />
        </div>
        <Field label={t('compose.subject')} value={subject} onChange={(e) => setSubject(e.target.value)} error={fieldError(save.error, 'subject')} />
        <Field label={t('compose.preheader')} value={preheader} onChange={(e) => setPreheader(e.target.value)} maxLength={255}
          hint={t('compose.preheaderHint')} error={fieldError(save.error, 'preheader')} />
        <EmailEditor project={project.id} initial={saved} revision={0} testPath={`/templates/${tpl.id}/test`} startWith={new URLSearchParams(location.search).get('start') ?? undefined} subject={subject} onChange={setContent} error={fieldError(save.error, 'body') ?? fieldError(save.error, 'design')} />
        <button type="submit" disabled={save.isPending}>{save.isPending ? t('ui.saving') : t('ui.save')}</button>
      </form>
    </div>
  )
}
