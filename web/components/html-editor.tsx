import { useId, useMemo, useState } from 'react'
import { t } from '../i18n'

/** The variables a template uses: `{{name}}`, `{{data.plan}}`, `{{name | default}}`-like forms, helpers left out. */
export function variablesOf(text: string): string[] {
  const out = new Set<string>()
  for (const m of text.matchAll(/\{\{\{?\s*([A-Za-z_][\w.]*)[^}]*\}\}\}?/g)) {
    if (!['if', 'else', 'each', 'unless', 'with'].includes(m[1])) out.add(m[1])
  }
  return [...out]
}

/** Variables every message provides: never reported missing from the sample. */
const BUILT_INS = new Set(['email', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl'])

/** An approximate preview: variables replaced from the sample data (or their fallback), HTML-escaped as Handlebars does. */
export function preview(html: string, sample: Record<string, unknown>): string {
  const esc = (v: string) => v.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
  const lookup = (path: string): string => {
    let v: unknown = sample
    for (const k of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined
    return v === undefined || v === null ? '' : String(v)
  }
  // A fallback, `{{ name | default: "there" }}`, stands in for a value that is missing or empty.
  const value = (k: string, fallback?: string) => lookup(k) || (fallback ?? '')
  return html
    .replace(/\{\{\{\s*([\w.]+)\s*(?:\|\s*default:\s*(?:"([^"]*)"|'([^']*)')\s*)?\}\}\}/g, (_, k, a, b) => value(k, a ?? b))
    .replace(/\{\{\s*([\w.]+)\s*(?:\|\s*default:\s*(?:"([^"]*)"|'([^']*)')\s*)?\}\}/g, (_, k, a, b) => esc(value(k, a ?? b)))
}

/**
 * The HTML source of an email next to its live preview (a sandboxed iframe), with sample contact data for
 * the variables and the list of variables used (templates and campaigns).
 */
export function HtmlEditor({ subject, body, onBody, error, onSourceFocus, previewHtml }: {
  subject: string; body: string; onBody: (body: string) => void; error?: string
  /** The source got the focus (the email editor's variable picker inserts there). */
  onSourceFocus?: (el: HTMLTextAreaElement) => void
  /** The server's rendering for a chosen contact (the editor's "Preview as a contact"): shown instead of the sample's. */
  previewHtml?: string
}) {
  const [sampleText, setSampleText] = useState('{\n  "name": "Ada",\n  "email": "ada@example.com"\n}')
  const bodyId = useId()
  const sampleId = useId()
  const sample = useMemo(() => { try { return JSON.parse(sampleText) as Record<string, unknown> } catch { return null } }, [sampleText])
  const vars = useMemo(() => variablesOf(`${subject}\n${body}`), [subject, body])
  return (
    <>
      <div className="editor">
        <div className="field">
          <span><label htmlFor={bodyId}>{t('ed.html.source')}</label></span>
          <textarea id={bodyId} className="mono" rows={18} value={body} onChange={(e) => onBody(e.target.value)} onFocus={onSourceFocus ? (e) => onSourceFocus(e.currentTarget) : undefined} aria-invalid={error ? true : undefined} aria-describedby={error ? `${bodyId}-err` : undefined} />
          {error && <span id={`${bodyId}-err`} className="err">{error}</span>}
        </div>
        <div className="field">
          <span>{t('ed.html.preview')}</span>
          {/* sandbox without allow-scripts: the template's HTML cannot run code or reach the dashboard */}
          <iframe title={t('ed.previewTitle')} sandbox="" srcDoc={previewHtml ?? (sample ? preview(body, sample) : body)} className="preview" />
        </div>
      </div>
      <div className="row">
        <div className="field" style={{ flex: '1 1 260px' }}>
          <span><label htmlFor={sampleId}>{t('ed.html.sample')}</label></span>
          <textarea id={sampleId} className="mono" rows={5} value={sampleText} onChange={(e) => setSampleText(e.target.value)} aria-invalid={sample ? undefined : true} />
          {!sample && <span className="err">{t('ed.html.sampleInvalid')}</span>}
        </div>
        <div className="field" style={{ flex: '1 1 260px' }}>
          <span>{t('ed.html.variables')}</span>
          {vars.length === 0 ? <span className="muted small">{t('ed.html.none')}</span> : <ul className="small">{vars.map((v) => <li key={v}><code>{v}</code>{BUILT_INS.has(v) ? <span className="muted">{t('ed.html.builtIn')}</span> : sample && !(v.split('.')[0] in sample) && <span className="muted">{t('ed.html.notInSample')}</span>}</li>)}</ul>}
        </div>
      </div>
    </>
  )
}
