import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useId, useMemo, useRef, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { call, type Domain, get, post, type Project } from '../../api'
import { EmailEditor, type EditorValue } from '../../components/email-editor'
import { ErrorBox, Field, fieldError, FormField, Loading, PageHead, withoutChanged } from '../../components/ui'
import { t } from '../../i18n'
import { AbTestFields } from './abtest'
import { AudiencePicker } from './audience'
import type { AbTest, Audience, Campaign, CampaignInput } from './types'

interface Template { id: string; name: string; subject: string; preheader: string | null; body: string; design: Record<string, unknown> | null; from: string; fromName: string | null; replyTo: string | null; type: string }

const STARTER = '<h1>Hello {{name}},</h1>\n<p>Write your message here.</p>\n<p><a href="https://example.com">Read more</a></p>\n<p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>'

/** The fields the form highlights with the API's own message. */
const SHOWN = ['name', 'subject', 'preheader', 'from', 'fromName', 'replyTo', 'body', 'segmentId', 'audienceCondition', 'type', 'abTest.testPercent', 'abTest.waitMinutes', 'abTest.variants.0', 'abTest.variants.1', 'abTest.variants.2', 'abTest.variants.3']

export function NewCampaign({ project }: { project: Project }) {
  return (
    <div>
      <PageHead title={t('campaigns.new')} />
      <p className="small muted"><Link href="/campaigns">← {t('campaign.all')}</Link></p>
      <CampaignForm project={project} />
    </div>
  )
}

/**
 * The composer: content (from scratch or a template), the sender on a verified domain, and the audience.
 * Without `campaign` it creates a DRAFT and opens it; with one it replaces it (DRAFT or SCHEDULED).
 */
export function CampaignForm({ project, campaign }: { project: Project; campaign?: Campaign }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const id = useId()
  const domains = useQuery({ queryKey: ['domains', project.id], queryFn: () => get<Domain[]>(`/domains/project/${project.id}`, project.id) })
  const templates = useQuery({ queryKey: ['templates', project.id, 'all'], queryFn: () => get<{ data: Template[] }>('/templates?pageSize=100&sort=name&dir=asc', project.id) })
  const [name, setName] = useState(campaign?.name ?? '')
  const [subject, setSubject] = useState(campaign?.subject ?? '')
  const [preheader, setPreheader] = useState(campaign?.preheader ?? '')
  const [abTest, setAbTest] = useState<AbTest | null>(campaign?.abTest ?? null)
  // `initial` is what the editor opens (the campaign, or a template chosen later: `revision` tells it to
  // start again); `content` follows every change.
  const [initial, setInitial] = useState<{ value: EditorValue; revision: number }>({ value: { body: campaign?.body ?? STARTER, design: campaign?.design ?? null }, revision: 0 })
  const [content, setContent] = useState<EditorValue>(initial.value)
  // The body the editor opened with: content that still equals it was not written by the user. Both are
  // refs as well, set as the editor reports: a template chosen between the editor's report and the render
  // that follows must compare the editor's opening with what it reported, not with the state before it.
  const opened = useRef<string | null>(null)
  const reported = useRef<EditorValue>(initial.value)
  // Fields changed since the last save: their errors are no longer shown.
  const [changed, setChanged] = useState<ReadonlySet<string>>(new Set())
  const touch = (...fields: string[]) => setChanged((s) => (fields.every((f) => s.has(f)) ? s : new Set([...s, ...fields])))
  const onContent = (v: EditorValue) => {
    if (opened.current === null) opened.current = v.body
    else if (v.body !== reported.current.body) touch('body', 'design')
    reported.current = v
    setContent(v)
  }
  // A new campaign starts from the project's sender defaults (settings page).
  const sender = campaign?.from ?? project.defaultFrom
  const [local, setLocal] = useState(sender ? sender.split('@')[0] : 'hello')
  const [domain, setDomain] = useState(sender ? sender.split('@')[1] ?? '' : '')
  const [fromName, setFromName] = useState(campaign ? campaign.fromName ?? '' : project.defaultFromName ?? '')
  const [replyTo, setReplyTo] = useState(campaign ? campaign.replyTo ?? '' : project.defaultReplyTo ?? '')
  const [audience, setAudience] = useState<Audience>({
    type: campaign?.type ?? 'MARKETING', audienceType: campaign?.audienceType ?? 'ALL',
    segmentId: campaign?.segmentId ?? null, audienceCondition: campaign?.audienceCondition ?? null,
  })
  const verified = (domains.data ?? []).filter((d) => d.verified)
  const chosen = domain || verified[0]?.domain || ''
  const save = useMutation({
    mutationFn: (input: CampaignInput) => campaign
      ? call<Campaign>('PUT', `/campaigns/${campaign.id}`, { body: input, project: project.id })
      : post<{ data: Campaign }>('/campaigns', input, project.id).then((r) => r.data),
    onSuccess: async (c) => {
      qc.setQueryData(['campaign', project.id, c.id], c)
      await qc.invalidateQueries({ queryKey: ['campaigns', project.id] })
      if (!campaign) navigate(`/campaigns/${c.id}`)
    },
  })
  const shownError = useMemo(() => withoutChanged(save.error, changed), [save.error, changed])
  const applyTemplate = (tid: string) => {
    const tpl = templates.data?.data.find((x) => x.id === tid)
    if (!tpl) return
    // Written content is not replaced without asking.
    const written = campaign !== undefined || initial.revision > 0 || subject.trim() !== '' || (opened.current !== null && reported.current.body !== opened.current)
    if (written && !window.confirm(t('compose.replaceConfirm', { name: tpl.name }))) return
    setSubject(tpl.subject)
    setPreheader(tpl.preheader ?? '')
    const value = { body: tpl.body, design: tpl.design ?? null }
    setInitial({ value, revision: initial.revision + 1 })
    reported.current = value
    setContent(value)
    if (!name) setName(tpl.name)
    const [l, d] = tpl.from.split('@')
    if (verified.some((v) => v.domain === d)) { setLocal(l); setDomain(d) }
    if (tpl.fromName) setFromName(tpl.fromName)
    if (tpl.replyTo) setReplyTo(tpl.replyTo)
  }
  const submit = (e: FormEvent) => {
    e.preventDefault()
    setChanged(new Set())
    save.mutate({
      name: name.trim(), subject, preheader: preheader.trim() || null, body: content.body, design: content.design, from: `${local.trim()}@${chosen}`, fromName: fromName.trim() || null, replyTo: replyTo.trim() || null,
      type: audience.type, audienceType: audience.audienceType,
      segmentId: audience.audienceType === 'SEGMENT' ? audience.segmentId : null,
      ...(audience.audienceType === 'FILTERED' ? { audienceCondition: audience.audienceCondition } : {}),
      ...(abTest ? { abTest } : {}),
    })
  }
  if (domains.isPending) return <Loading />
  const fromError = fieldError(shownError, 'from')
  return (
    <form onSubmit={submit} noValidate aria-label={campaign ? t('compose.edit') : t('campaigns.new')}>
      <ErrorBox error={domains.error ?? shownError} shown={SHOWN} />
      {save.isSuccess && campaign && <div className="alert ok" role="status">{t('ui.saved')}</div>}
      {verified.length === 0 && (
        <div className="alert warn" role="alert">
          {t('compose.noDomain')} <Link href="/domains">{t('compose.addDomain')}</Link>
        </div>
      )}
      <div className="card">
        <h2>{t('compose.content')}</h2>
        <div className="row">
          <Field label={t('campaigns.name')} value={name} onChange={(e) => { setName(e.target.value); touch('name') }} error={fieldError(shownError, 'name')} />
          {(templates.data?.data.length ?? 0) > 0 && (
            <FormField label={t('compose.fromTemplate')} id={`${id}-tpl`}>
              {(c) => (
                <select {...c} value="" onChange={(e) => applyTemplate(e.target.value)}>
                  <option value="">{t('compose.chooseTemplate')}</option>
                  {templates.data?.data.map((t) => <option key={t.id} value={t.id}>{t.name}</option>)}
                </select>
              )}
            </FormField>
          )}
          <FormField label={t('contact.type')} id={`${id}-type`}>
            {(c) => (
              <select {...c} value={audience.type} onChange={(e) => setAudience({ ...audience, type: e.target.value as Audience['type'] })}>
                <option value="MARKETING">{t('compose.marketing')}</option>
                <option value="TRANSACTIONAL">{t('compose.transactional')}</option>
                <option value="HEADLESS">{t('compose.headless')}</option>
              </select>
            )}
          </FormField>
        </div>
        <div className="row">
          <FormField label={t('compose.sender')} id={`${id}-local`} error={fromError}>
            {(c) => (
              <span className="sender">
                <input {...c} value={local} onChange={(e) => { setLocal(e.target.value); touch('from') }} autoComplete="off" />
                <span aria-hidden="true">@</span>
                <select aria-label={t('compose.senderDomain')} value={chosen} onChange={(e) => { setDomain(e.target.value); touch('from') }}>
                  {chosen && !verified.some((d) => d.domain === chosen) && <option value={chosen}>{t('compose.notVerified', { domain: chosen })}</option>}
                  {verified.map((d) => <option key={d.id} value={d.domain}>{d.domain}</option>)}
                </select>
              </span>
            )}
          </FormField>
          <Field label={t('compose.senderName')} value={fromName} onChange={(e) => { setFromName(e.target.value); touch('fromName') }} placeholder="Acme" error={fieldError(shownError, 'fromName')} />
          <Field label={t('compose.replyTo')} type="email" value={replyTo} onChange={(e) => { setReplyTo(e.target.value); touch('replyTo') }} placeholder={t('compose.optional')} error={fieldError(shownError, 'replyTo')} />
        </div>
        <Field label={t('compose.subject')} value={subject} onChange={(e) => { setSubject(e.target.value); touch('subject') }} error={fieldError(shownError, 'subject')} />
        <Field label={t('compose.preheader')} value={preheader} onChange={(e) => { setPreheader(e.target.value); touch('preheader') }} maxLength={255}
          hint={t('compose.preheaderHint')} error={fieldError(shownError, 'preheader')} />
        <EmailEditor project={project.id} initial={initial.value} revision={initial.revision} testPath={campaign ? `/campaigns/${campaign.id}/test` : undefined} startWith={campaign || initial.revision > 0 ? undefined : 'blank'} subject={subject}
          onChange={onContent} error={fieldError(shownError, 'body') ?? fieldError(shownError, 'design')} />
      </div>
      <AbTestFields value={abTest} subject={subject} onChange={(v) => { setAbTest(v); touch('abTest') }} fieldError={(f) => fieldError(shownError, f)} />
      <AudiencePicker project={project} value={audience} onChange={(a) => { setAudience(a); touch('type', 'audienceType', 'segmentId', 'audienceCondition') }} error={shownError} />
      <div className="row">
        <button type="submit" disabled={save.isPending || verified.length === 0}>{save.isPending ? t('ui.saving') : campaign ? t('compose.saveChanges') : t('compose.saveDraft')}</button>
        {!campaign && <span className="muted small">{t('compose.nextPage')}</span>}
      </div>
    </form>
  )
}
