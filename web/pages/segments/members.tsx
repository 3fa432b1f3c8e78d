import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useId, useState } from 'react'
import { Link } from 'wouter'
import { type Answer, ApiError, call, get, post, type Project } from '../../api'
import { Badge, Empty, ErrorBox, formatDate, FormField, Loading, Pager } from '../../components/ui'
import { t } from '../../i18n'
import type { Segment } from '.'
import { formatNumber } from '../../format'

type MemberPage = Answer<'/segments/{id}/contacts'>
type AddResult = Answer<'/segments/{id}/members', 'post'>
type RemoveResult = Answer<'/segments/{id}/members', 'delete'>

const PAGE_SIZE = 25

/** The members of a segment, page by page (live for DYNAMIC), and for STATIC ones the editing by email. */
export function Members({ project, seg }: { project: Project; seg: Segment }) {
  const qc = useQueryClient()
  const [page, setPage] = useState(1)
  const list = useQuery({
    queryKey: ['segment-members', project.id, seg.id, page],
    queryFn: () => get<MemberPage>(`/segments/${seg.id}/contacts?page=${page}&pageSize=${PAGE_SIZE}`, project.id),
    placeholderData: keepPreviousData,
  })
  const changed = async () => {
    await Promise.all([
      qc.invalidateQueries({ queryKey: ['segment-members', project.id, seg.id] }),
      qc.invalidateQueries({ queryKey: ['segment', project.id, seg.id] }),
      qc.invalidateQueries({ queryKey: ['segments', project.id] }),
    ])
  }
  const removeOne = useMutation({
    mutationFn: (email: string) => call<RemoveResult>('DELETE', `/segments/${seg.id}/members`, { body: { emails: [email] }, project: project.id }),
    onSuccess: changed,
  })
  const data = list.data
  return (
    <>
      {seg.type === 'STATIC' && <EditMembers project={project} seg={seg} onChanged={changed} />}
      <section className="card" aria-labelledby="members-title">
        <h2 id="members-title">{t('members.title')}</h2>
        {list.isPending && <Loading />}
        <ErrorBox error={list.error ?? removeOne.error} />
        {data && data.total === 0 && (seg.type === 'STATIC'
          ? <Empty title={t('members.none')}>{t('members.noneText')}</Empty>
          : <Empty title={t('members.noMatch')}>{t('members.noMatchText')}</Empty>)}
        {data && data.total > 0 && (
          <>
            <p className="small muted" aria-live="polite">{t(seg.type === 'DYNAMIC' ? 'members.countNow' : 'members.count', { count: data.total })}{list.isFetching && t('ui.loadingMore')}</p>
            <div className="table-wrap"><table>
              <thead><tr><th scope="col">{t('contacts.email')}</th><th scope="col">{t('contacts.subscription')}</th><th scope="col">{t('contacts.created')}</th>{seg.type === 'STATIC' && <th scope="col"><span className="sr-only">{t('members.actions')}</span></th>}</tr></thead>
              <tbody>{data.data.map((c) => (
                <tr key={c.id}>
                  <td><Link href={`/contacts/${c.id}`}>{c.email}</Link></td>
                  <td><Badge status={c.subscribed ? 'ok' : 'failed'}>{c.subscribed ? t('contacts.subscribed') : t('contacts.unsubscribed')}</Badge></td>
                  <td>{formatDate(c.createdAt)}</td>
                  {seg.type === 'STATIC' && (
                    <td><button type="button" className="secondary small" disabled={removeOne.isPending} onClick={() => removeOne.mutate(c.email)} aria-label={t('members.removeOne', { email: c.email })}>{t('members.remove')}</button></td>
                  )}
                </tr>
              ))}</tbody>
            </table></div>
            <Pager label={t('members.pages')} where={t('ui.pageOf', { page: data.page, pages: Math.max(1, data.totalPages) })} hasPrev={page > 1} hasNext={page < data.totalPages}
              busy={list.isFetching} onPrev={() => setPage((p) => p - 1)} onNext={() => setPage((p) => p + 1)} />
          </>
        )}
      </section>
    </>
  )
}

function emailsOf(text: string): string[] {
  return [...new Set(text.split(/[\s,;]+/).map((e) => e.trim()).filter(Boolean))]
}

function EditMembers({ project, seg, onChanged }: { project: Project; seg: Segment; onChanged: () => Promise<void> }) {
  const areaId = useId()
  const [text, setText] = useState('')
  const [createMissing, setCreateMissing] = useState(false)
  const [done, setDone] = useState<string | null>(null)
  // The list last sent, to name the address an error points at.
  const [sent, setSent] = useState<string[]>([])
  const add = useMutation({
    mutationFn: (emails: string[]) => post<AddResult>(`/segments/${seg.id}/members`, { emails, createMissing }, project.id),
    onSuccess: async (r) => {
      setDone([
        t('members.added', { n: formatNumber(r.added) }), r.alreadyMembers ? t('members.already', { count: r.alreadyMembers }) : '',
        r.created ? t('members.created', { count: r.created }) : '',
        r.notFound.length ? t('members.notFound', { emails: r.notFound.join(', ') }) : '',
      ].filter(Boolean).join(' · '))
      setText(r.notFound.join('\n'))
      await onChanged()
    },
  })
  const remove = useMutation({
    mutationFn: (emails: string[]) => call<RemoveResult>('DELETE', `/segments/${seg.id}/members`, { body: { emails }, project: project.id }),
    onSuccess: async (r) => {
      setDone([t('members.removed', { n: formatNumber(r.removed) }), r.notMembers.length ? t('members.notMembers', { emails: r.notMembers.join(', ') }) : ''].filter(Boolean).join(' · '))
      setText('')
      await onChanged()
    },
  })
  const emails = emailsOf(text)
  const error = add.error ?? remove.error
  // The API names the address at fault by its place in the list (emails.3): it is shown on the field, by the address.
  const atField = error instanceof ApiError ? error.fields.find((f) => f.field === 'emails' || f.field.startsWith('emails.')) : undefined
  const fieldText = atField && (() => {
    const n = /^emails\.(\d+)/.exec(atField.field)?.[1]
    const message = atField.message.replace(/^[\w.]+: /, '')
    return n !== undefined && sent[Number(n)] ? t('members.invalid', { email: sent[Number(n)], message }) : message
  })()
  const act = (m: typeof add | typeof remove) => { setDone(null); add.reset(); remove.reset(); setSent(emails); m.mutate(emails) }
  return (
    <section className="card" aria-labelledby="edit-members-title">
      <h2 id="edit-members-title">{t('members.edit')}</h2>
      <ErrorBox error={error} shown={['emails']} />
      {done && <div className="alert ok" role="status">{done}</div>}
      <FormField label={t('members.emails')} id={areaId} hint={t('members.hint')} error={fieldText}>
        {(c) => <textarea {...c} rows={4} value={text} onChange={(e) => setText(e.target.value)} placeholder={'ada@example.com\ngrace@example.com'} />}
      </FormField>
      <div className="check"><input id="create-missing" type="checkbox" checked={createMissing} onChange={(e) => setCreateMissing(e.target.checked)} /><label htmlFor="create-missing">{t('members.createMissing')}</label></div>
      <div className="row">
        <button type="button" disabled={!emails.length || add.isPending} onClick={() => act(add)}>{t('members.add')}</button>
        <button type="button" className="secondary" disabled={!emails.length || remove.isPending} onClick={() => act(remove)}>{t('members.removeMany')}</button>
      </div>
    </section>
  )
}
