import { useEffect, useId, useState } from 'react'
import { call, type Contact, type ContactPage } from '../api'
import { t } from '../i18n'

/**
 * Preview as a real contact: search the project's contacts by email, pick one, and the
 * editor's previews show the email as the server renders it for that contact (`POST /templates/preview`),
 * with the variables that come out empty for it (built-in ones never count). With a saved template or
 * campaign (`testPath`), a test goes to up to five addresses rendered with the chosen contact's data.
 */

export interface AsContact { id: string; email: string }
export interface Rendered { subject: string; html: string; missing: string[] }

const MAX_TEST_ADDRESSES = 5

export function PreviewAs({ project, subject, body, testPath, onRendered }: {
  project: string; subject: string; body: string; testPath?: string
  /** The server's rendering for the chosen contact, or null (the editor's sample data then). */
  onRendered: (r: Rendered | null) => void
}) {
  const id = useId()
  const [query, setQuery] = useState('')
  const [found, setFound] = useState<Contact[]>([])
  const [searched, setSearched] = useState(false)
  const [as, setAs] = useState<AsContact | null>(null)
  const [rendered, setRendered] = useState<Rendered | null>(null)
  const [error, setError] = useState('')

  // Search 250 ms after the last keystroke.
  useEffect(() => {
    const q = query.trim()
    if (!q) { setFound([]); setSearched(false); return }
    let gone = false
    const timer = setTimeout(() => {
      call<ContactPage>('GET', `/contacts?search=${encodeURIComponent(q)}&limit=5&total=false`, { project })
        .then((p) => { if (!gone) { setFound(p.data); setSearched(true) } }, (e: Error) => { if (!gone) setError(e.message) })
    }, 250)
    return () => { gone = true; clearTimeout(timer) }
  }, [query, project])

  // Render as the chosen contact 300 ms after the content last changed.
  // biome-ignore lint/correctness/useExhaustiveDependencies: onRendered is the page's setter, not a cause to render again
  useEffect(() => {
    if (!as) { setRendered(null); onRendered(null); return }
    let gone = false
    const timer = setTimeout(() => {
      call<Rendered>('POST', '/templates/preview', { body: { subject, body, contactId: as.id }, project })
        .then((r) => { if (!gone) { setRendered(r); setError(''); onRendered(r) } }, (e: Error) => { if (!gone) setError(e.message) })
    }, 300)
    return () => { gone = true; clearTimeout(timer) }
  }, [as, subject, body, project])

  const choose = (c: Contact) => { setAs({ id: c.id, email: c.email }); setQuery(''); setFound([]) }
  return (
    <section className="mc-as" aria-labelledby={`${id}-h`}>
      <h3 id={`${id}-h`} className="mc-as-title">{t('edp.title')}</h3>
      {as ? (
        <p className="row small">
          <span>{t('edp.showingBefore')}<strong>{as.email}</strong>{t('edp.showingAfter')}</span>
          <button type="button" className="link small" onClick={() => setAs(null)}>{t('edp.back')}</button>
        </p>
      ) : (
        <div className="field">
          <span><label htmlFor={`${id}-q`}>{t('edp.find')}</label></span>
          <input id={`${id}-q`} type="search" value={query} onChange={(e) => setQuery(e.target.value)} placeholder={t('edp.findPlaceholder')} autoComplete="off" />
          {found.length > 0 && (
            <ul className="mc-as-list" aria-label={t('edp.matching')}>
              {found.map((c) => (
                <li key={c.id}><button type="button" className="secondary small" onClick={() => choose(c)}>{c.email}{nameOf(c) && <span className="muted"> · {nameOf(c)}</span>}</button></li>
              ))}
            </ul>
          )}
          {searched && found.length === 0 && <span className="hint" role="status">{t('edp.noMatch', { query: query.trim() })}</span>}
        </div>
      )}
      {error && <p className="small err" role="alert">{error}</p>}
      {as && rendered && (
        <div className="small" role="status" data-testid="preview-as-status">
          <div>{t('edp.subject')} <strong>{rendered.subject || t('edp.empty')}</strong></div>
          {rendered.missing.length === 0
            ? <div>{t('edp.allSet')}</div>
            : <div className="warn-text">{t('edp.missing')} {rendered.missing.map((v) => <code key={v}>{`{{${v}}}`} </code>)}</div>}
        </div>
      )}
      {as && testPath && <TestSend project={project} path={testPath} as={as} />}
    </section>
  )
}

function nameOf(c: Contact): string {
  const d = c.data ?? {}
  const first = typeof d.firstName === 'string' ? d.firstName : ''
  const last = typeof d.lastName === 'string' ? d.lastName : ''
  return `${first} ${last}`.trim() || (typeof d.name === 'string' ? d.name : '')
}

/** Up to five addresses, one test each, all rendered with the chosen contact's data (the saved version). */
function TestSend({ project, path, as }: { project: string; path: string; as: AsContact }) {
  const id = useId()
  const [to, setTo] = useState('')
  const [busy, setBusy] = useState(false)
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null)
  const send = async () => {
    const list = [...new Set(to.split(/[\s,;]+/).map((s) => s.trim().toLowerCase()).filter(Boolean))]
    if (list.length === 0) { setNote({ ok: false, text: t('edp.enterOne') }); return }
    if (list.length > MAX_TEST_ADDRESSES) { setNote({ ok: false, text: t('edp.atMost', { max: MAX_TEST_ADDRESSES }) }); return }
    setBusy(true); setNote(null)
    const failed: string[] = []
    for (const email of list) {
      try {
        await call('POST', path, { body: { email, contactId: as.id }, project })
      } catch (e) {
        failed.push(`${email}: ${(e as Error).message}`)
      }
    }
    setBusy(false)
    const sent = list.length - failed.length
    setNote(failed.length
      ? { ok: false, text: `${t('edp.someSent', { sent, total: list.length })} ${failed.join('; ')}` }
      : { ok: true, text: t('edp.sent', { to: list.join(', '), as: as.email }) })
  }
  return (
    <div className="field">
      <span><label htmlFor={`${id}-to`}>{t('edp.sendAs', { as: as.email })}</label></span>
      <span className="row">
        <input id={`${id}-to`} value={to} onChange={(e) => setTo(e.target.value)} placeholder="you@example.com, colleague@example.com" aria-describedby={`${id}-hint`} />
        <button type="button" className="secondary small" disabled={busy} onClick={send}>{busy ? t('edp.sending') : t('edp.send')}</button>
      </span>
      <span id={`${id}-hint`} className="hint">{t('edp.hint', { max: MAX_TEST_ADDRESSES })}</span>
      {note && <span className={note.ok ? 'small' : 'small err'} role={note.ok ? 'status' : 'alert'}>{note.text}</span>}
    </div>
  )
}
