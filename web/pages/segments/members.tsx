import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useId, useState } from 'react'
import { Link } from 'wouter'
import { type Contact, call, get, post, type Project } from '../../api'
import { Badge, Empty, ErrorBox, formatDate, Loading, Pager } from '../../components/ui'
import type { Segment } from '.'
import { formatNumber } from '../../format'

interface MemberPage { data: Contact[]; page: number; pageSize: number; total: number; totalPages: number }
interface AddResult { added: number; alreadyMembers: number; created: number; notFound: string[]; memberCount: number }
interface RemoveResult { removed: number; notMembers: string[]; memberCount: number }

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
        <h2 id="members-title">Members</h2>
        {list.isPending && <Loading />}
        <ErrorBox error={list.error ?? removeOne.error} />
        {data && data.total === 0 && (seg.type === 'STATIC'
          ? <Empty title="No members yet">Add contacts by email above.</Empty>
          : <Empty title="No contact matches">Change the conditions above, or wait for contacts and events that match them.</Empty>)}
        {data && data.total > 0 && (
          <>
            <p className="small muted" aria-live="polite">{formatNumber(data.total)} member{data.total === 1 ? '' : 's'}{seg.type === 'DYNAMIC' ? ' now' : ''}{list.isFetching && ' · loading…'}</p>
            <div className="table-wrap"><table>
              <thead><tr><th scope="col">Email</th><th scope="col">Subscription</th><th scope="col">Created</th>{seg.type === 'STATIC' && <th scope="col"><span className="sr-only">Actions</span></th>}</tr></thead>
              <tbody>{data.data.map((c) => (
                <tr key={c.id}>
                  <td><Link href={`/contacts/${c.id}`}>{c.email}</Link></td>
                  <td><Badge status={c.subscribed ? 'ok' : 'failed'}>{c.subscribed ? 'Subscribed' : 'Unsubscribed'}</Badge></td>
                  <td>{formatDate(c.createdAt)}</td>
                  {seg.type === 'STATIC' && (
                    <td><button type="button" className="secondary small" disabled={removeOne.isPending} onClick={() => removeOne.mutate(c.email)} aria-label={`Remove ${c.email} from the segment`}>Remove</button></td>
                  )}
                </tr>
              ))}</tbody>
            </table></div>
            <Pager label="Pages of members" where={`Page ${data.page} of ${Math.max(1, data.totalPages)}`} hasPrev={page > 1} hasNext={page < data.totalPages}
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
  const add = useMutation({
    mutationFn: (emails: string[]) => post<AddResult>(`/segments/${seg.id}/members`, { emails, createMissing }, project.id),
    onSuccess: async (r) => {
      setDone([
        `Added ${r.added}`, r.alreadyMembers ? `${r.alreadyMembers} already member${r.alreadyMembers === 1 ? '' : 's'}` : '',
        r.created ? `${r.created} contact${r.created === 1 ? '' : 's'} created` : '',
        r.notFound.length ? `not contacts (tick "create" to add them): ${r.notFound.join(', ')}` : '',
      ].filter(Boolean).join(' · '))
      setText(r.notFound.join('\n'))
      await onChanged()
    },
  })
  const remove = useMutation({
    mutationFn: (emails: string[]) => call<RemoveResult>('DELETE', `/segments/${seg.id}/members`, { body: { emails }, project: project.id }),
    onSuccess: async (r) => {
      setDone([`Removed ${r.removed}`, r.notMembers.length ? `not members: ${r.notMembers.join(', ')}` : ''].filter(Boolean).join(' · '))
      setText('')
      await onChanged()
    },
  })
  const emails = emailsOf(text)
  const error = add.error ?? remove.error
  const act = (m: typeof add | typeof remove) => { setDone(null); add.reset(); remove.reset(); m.mutate(emails) }
  return (
    <section className="card" aria-labelledby="edit-members-title">
      <h2 id="edit-members-title">Add or remove members</h2>
      <ErrorBox error={error} />
      {done && <div className="alert ok" role="status">{done}</div>}
      <div className="field">
        <span><label htmlFor={areaId}>Emails</label></span>
        <textarea id={areaId} rows={4} value={text} onChange={(e) => setText(e.target.value)} placeholder={'ada@example.com\ngrace@example.com'}
          aria-describedby={`${areaId}-hint`} aria-invalid={error ? true : undefined} />
        <span id={`${areaId}-hint`} className="hint">One per line, or separated by commas; at most 1,000 at a time.</span>
      </div>
      <div className="check"><input id="create-missing" type="checkbox" checked={createMissing} onChange={(e) => setCreateMissing(e.target.checked)} /><label htmlFor="create-missing">Create contacts for addresses that are not contacts yet</label></div>
      <div className="row">
        <button type="button" disabled={!emails.length || add.isPending} onClick={() => act(add)}>Add to segment</button>
        <button type="button" className="secondary" disabled={!emails.length || remove.isPending} onClick={() => act(remove)}>Remove from segment</button>
      </div>
    </section>
  )
}
