import { useQueryClient } from '@tanstack/react-query'
import { type ReactNode, useEffect, useId, useRef, useState } from 'react'
import { ApiError } from '../api'
import { formatDate as formatMoment } from '../format'
import { type MessageKey, t } from '../i18n'

/** What a FormField hands its control: the id its label names, and what describes it (hint, error). */
export interface ControlProps { id: string; 'aria-describedby'?: string; 'aria-invalid'?: true }

/**
 * One form field: a label bound to its control, an optional hint, and the field's own error shown on it.
 * The control is any input, select or textarea (or a group around one), drawn by `children` with the props
 * it must carry: the id the label points at, aria-describedby naming the hint and the error, aria-invalid
 * while there is an error. `invalid` and `describedBy` are for an error shown elsewhere (one message under
 * several fields): the control is marked invalid and described by that message's id.
 */
export function FormField({ label, hint, error, invalid, describedBy, id: given, className, children }: {
  label: ReactNode; hint?: ReactNode; error?: string; invalid?: boolean; describedBy?: string
  /** The control's id, when the page needs to name it; else one is made. */
  id?: string
  className?: string
  children: (control: ControlProps) => ReactNode
}) {
  const made = useId()
  const id = given ?? made
  const described = [hint ? `${id}-hint` : '', error ? `${id}-err` : '', describedBy ?? ''].filter(Boolean).join(' ') || undefined
  const control: ControlProps = { id, 'aria-describedby': described, 'aria-invalid': error || invalid ? true : undefined }
  return (
    <div className={className ? `field ${className}` : 'field'}>
      <span className="label"><label htmlFor={id}>{label}</label></span>
      {children(control)}
      {hint && <span id={`${id}-hint`} className="hint">{hint}</span>}
      {error && <span id={`${id}-err`} className="err">{error}</span>}
    </div>
  )
}

/** A labelled input; `error` (from the API's field errors) highlights it and is read out with it. */
export function Field(props: { label: string; hint?: string; error?: string } & React.InputHTMLAttributes<HTMLInputElement>) {
  const { label, hint, error, ...input } = props
  return <FormField label={label} hint={hint} error={error}>{(control) => <input {...control} {...input} />}</FormField>
}

/**
 * The message of an API error as a person wants it, with the field errors listed. `shown`: the fields the
 * form highlights with their own message; when the error is only about those, it points at them instead
 * of saying it twice.
 */
export function ErrorBox({ error, shown }: { error: unknown; shown?: string[] }) {
  const qc = useQueryClient()
  if (!error) return null
  const e = error instanceof ApiError ? error : null
  // A failed connection or a server error of a query can be asked again; a form's
  // error is retried by sending the form again.
  const retryable = e !== null && (e.status === 0 || e.status >= 500)
  const failed = retryable ? qc.getQueryCache().findAll({ predicate: (q) => q.state.error === error }) : []
  const atFields = e && shown && e.fields.length > 0 && e.fields.every((f) => shown.some((n) => f.field === n || f.field.startsWith(`${n}.`)))
  const message = atFields ? t('ui.checkFields', { count: e?.fields.length ?? 1 }) : e ? (e.status === 0 ? t('ui.network') : e.message) : error instanceof Error ? error.message : String(error)
  return (
    <div className="alert error" role="alert">
      {message}
      {e && !atFields && e.fields.length > 1 && <ul>{e.fields.map((f) => <li key={f.field}>{f.message}</li>)}</ul>}
      {failed.length > 0 && (
        <div><button type="button" className="secondary small" onClick={() => { for (const q of failed) qc.refetchQueries({ queryKey: q.queryKey, exact: true }) }}>{t('ui.tryAgain')}</button></div>
      )}
    </div>
  )
}

/**
 * For a form of one input: an API validation error (400/422) that names no field (some routes answer a flat
 * `{error}`, e.g. POST /contacts without an email) is about that input, and is shown on it.
 */
export function onField(error: unknown, name: string): unknown {
  if (!(error instanceof ApiError) || error.fields.length > 0 || (error.status !== 400 && error.status !== 422)) return error
  return new ApiError(error.status, error.code, error.message, [{ field: name, message: error.message, code: error.code }])
}

/** The field's message from an API error, if it names that field. */
export function fieldError(error: unknown, name: string): string | undefined {
  return error instanceof ApiError ? error.field(name) : undefined
}

/**
 * The error as it stands once some fields were changed since it came (an error disappears once its
 * field is fixed): their field errors are dropped, and an error that was only about them is gone.
 */
export function withoutChanged(error: unknown, changed: ReadonlySet<string>): unknown {
  if (!(error instanceof ApiError) || error.fields.length === 0 || changed.size === 0) return error
  const left = error.fields.filter((f) => ![...changed].some((n) => f.field === n || f.field.startsWith(`${n}.`)))
  if (left.length === error.fields.length) return error
  if (left.length === 0) return null
  return new ApiError(error.status, error.code, left.length === 1 ? left[0].message : error.message, left)
}

export function Loading({ label }: { label?: string }) {
  return <div className="loading" role="status" aria-live="polite">{label ?? t('ui.loading')}</div>
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return <div className="empty"><strong>{title}</strong>{children}</div>
}

export function PageHead({ title, children }: { title: string; children?: ReactNode }) {
  return <div className="head"><h1>{title}</h1>{children && <div className="row">{children}</div>}</div>
}

/** Copies `text`; works on plain http too (the Clipboard API needs a secure context). */
export function CopyButton({ text, label }: { text: string; label?: string }) {
  const [done, setDone] = useState(false)
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text)
    } catch {
      const area = document.createElement('textarea')
      area.value = text
      document.body.append(area)
      area.select()
      document.execCommand('copy')
      area.remove()
    }
    setDone(true)
    setTimeout(() => setDone(false), 1500)
  }
  return (
    <button type="button" className="secondary small" onClick={copy}>
      <span aria-live="polite">{done ? t('ui.copied') : label ?? t('ui.copy')}</span>
    </button>
  )
}

/**
 * A button that asks once more inline before it acts (no modal to trap focus). Focus moves into the
 * question when it opens and back to the button when it closes; Escape cancels.
 */
export function ConfirmButton({ label, confirm, onConfirm, busy }: { label: string; confirm: string; onConfirm: () => void; busy?: boolean }) {
  const [asking, setAsking] = useState(false)
  const opener = useRef<HTMLButtonElement>(null)
  const question = useRef<HTMLSpanElement>(null)
  const moved = useRef(false)
  const id = useId()
  useEffect(() => {
    if (asking) { question.current?.focus(); moved.current = true }
    else if (moved.current) { opener.current?.focus(); moved.current = false }
  }, [asking])
  if (!asking) return <button ref={opener} type="button" className="secondary" onClick={() => setAsking(true)} disabled={busy}>{label}</button>
  return (
    <fieldset className="plain row confirm" aria-labelledby={id} onKeyDown={(e) => { if (e.key === 'Escape') setAsking(false) }}>
      <span id={id} ref={question} tabIndex={-1}>{confirm}</span>
      <button type="button" className="danger" onClick={() => { setAsking(false); onConfirm() }}>{t('ui.yes', { action: label.toLowerCase() })}</button>
      <button type="button" className="secondary" onClick={() => setAsking(false)}>{t('ui.cancel')}</button>
    </fieldset>
  )
}

/** A status as a badge; without children, its word in the language in effect (an unknown status shows itself). */
export function Badge({ status, children }: { status: string; children?: ReactNode }) {
  return <span className={`badge ${status}`}>{children ?? t(`status.${status}` as MessageKey)}</span>
}

/**
 * A moment in the viewer's locale (web/format.ts, the one date format of the dashboard). The server sends
 * ISO text; its document also allows epoch milliseconds for some dates, which format the same.
 */
export function formatDate(iso: string | number | null | undefined): string {
  return formatMoment(iso)
}

/**
 * Previous / Next under a list: `where` says the page ("Page 2 of 7"); Next waits while a page is fetched,
 * so a double click does not skip one.
 */
export function Pager({ label, where, hasPrev, hasNext, busy, onPrev, onNext }: {
  label?: string; where: string; hasPrev: boolean; hasNext: boolean; busy?: boolean; onPrev: () => void; onNext: () => void
}) {
  return (
    <nav className="pager" aria-label={label ?? t('ui.pages')}>
      <button type="button" className="secondary" disabled={!hasPrev} onClick={onPrev}>{t('ui.previous')}</button>
      <span className="small muted">{where}</span>
      <button type="button" className="secondary" disabled={!hasNext || busy} onClick={onNext}>{t('ui.next')}</button>
    </nav>
  )
}
