import { type DragEvent, type ReactNode, useEffect, useId, useMemo, useRef, useState } from 'react'
import { call } from '../api'
import { HtmlEditor, preview } from '../components/html-editor'
import {
  asDesign, type Block, type BlockStyle, type BlockType, type Design, designToHtml, emptyDesign, findBlock, FONTS,
  indexOf, mapBlocks, moveBlock, newBlock, type Settings,
} from './design'
import { PreviewAs, type Rendered } from './contact-preview'
import { type MessageKey, t } from '../i18n'
import { markdownBody } from './markdown'
import { starters } from './starters'

/**
 * The email editor, loaded only on the template and campaign pages (web/components/email-editor.tsx
 * mounts it). Three modes: Visual (blocks), HTML (the source) and Markdown. Every change hands the page the
 * `body` to save and the `design` that re-opens the blocks (null in HTML mode).
 */

export interface EditorValue { body: string; design: Record<string, unknown> | null }
export interface EditorProps {
  /** The saved content; the editor starts from it and again whenever `revision` changes (and then calls onChange with what it opened). */
  initial: EditorValue
  revision: number
  subject: string
  project: string
  /** Merge-tag names for the picker: the project's contact fields. */
  fields: string[]
  error?: string
  /** For content without a design: open Visual mode on this starter (an id of starters()) or 'blank'. */
  startWith?: string
  /** The saved template's or campaign's test endpoint (`/templates/<id>/test`): test sends as a contact. */
  testPath?: string
  onChange: (v: EditorValue) => void
}

type Mode = 'visual' | 'html' | 'markdown'

const BUILT_INS = ['email', 'unsubscribeUrl', 'manageUrl', 'subscribeUrl']

/** The place a merge tag goes: the last text field that had the focus. */
interface Target { insert: (tag: string) => void }

/** The design to open: the saved one, else the starter asked for, else none (HTML mode). */
function opening(p: EditorProps): Design | null {
  const saved = asDesign(p.initial.design)
  if (saved || !p.startWith) return saved
  return starters().find((s) => s.id === p.startWith)?.make() ?? emptyDesign()
}

export function EmailEditor(props: EditorProps) {
  const [start] = useState(() => opening(props))
  const [mode, setMode] = useState<Mode>(start ? (start.mode === 'markdown' ? 'markdown' : 'visual') : 'html')
  const [design, setDesign] = useState<Design>(start ?? emptyDesign())
  const [html, setHtml] = useState(props.initial.body)
  const target = useRef<Target | null>(null)
  const [asContact, setAsContact] = useState<Rendered | null>(null)
  const seen = useRef(props.revision)
  // biome-ignore lint/correctness/useExhaustiveDependencies: starts again only when the page says so (revision)
  useEffect(() => {
    if (seen.current === props.revision) return
    seen.current = props.revision
    const d = opening(props)
    setMode(d ? (d.mode === 'markdown' ? 'markdown' : 'visual') : 'html')
    setDesign(d ?? emptyDesign())
    setHtml(props.initial.body)
    emit(d ? (d.mode === 'markdown' ? 'markdown' : 'visual') : 'html', d ?? emptyDesign(), props.initial.body)
  }, [props.revision])
  // The page hears what was opened at once (a starter opened on content without a design is its content).
  // biome-ignore lint/correctness/useExhaustiveDependencies: once, with what was opened
  useEffect(() => { emit(mode, design, html) }, [])

  const emit = (m: Mode, d: Design, h: string) => {
    if (m === 'html') props.onChange({ body: h, design: null })
    else if (m === 'markdown') props.onChange({ body: designToHtml(d, markdownBody(d.markdown ?? '')), design: { ...d, blocks: [] } as unknown as Record<string, unknown> })
    else props.onChange({ body: designToHtml(d), design: d as unknown as Record<string, unknown> })
  }
  const changeDesign = (d: Design) => { setDesign(d); emit(mode, d, html) }
  const changeHtml = (h: string) => { setHtml(h); emit('html', design, h) }

  const switchTo = (next: Mode) => {
    if (next === mode) return
    if (next === 'html') {
      if (!window.confirm(t('ed.toHtml'))) return
      const h = mode === 'markdown' ? designToHtml(design, markdownBody(design.markdown ?? '')) : designToHtml(design)
      setHtml(h); setMode('html'); emit('html', design, h)
      return
    }
    if (next === 'markdown') {
      if (mode === 'visual' && !window.confirm(t('ed.toMarkdownFromVisual'))) return
      if (mode === 'html' && !window.confirm(t('ed.toMarkdownFromHtml'))) return
      const d: Design = { ...design, mode: 'markdown', markdown: design.markdown ?? t('ed.def.markdown') }
      setDesign(d); setMode('markdown'); emit('markdown', d, html)
      return
    }
    // To Visual: HTML is kept as one raw HTML block; Markdown's text becomes a text block.
    if (!window.confirm(mode === 'html' ? t('ed.toVisualFromHtml') : t('ed.toVisualFromMarkdown'))) return
    const first: Block = mode === 'html'
      ? { ...newBlock('html'), html: bodyOf(html) }
      : { ...newBlock('text'), html: markdownBody(design.markdown ?? '') }
    const d: Design = { ...design, mode: 'visual', blocks: [first] }
    setDesign(d); setMode('visual'); emit('visual', d, html)
  }

  const body = mode === 'html' ? html : mode === 'markdown' ? designToHtml(design, markdownBody(design.markdown ?? '')) : designToHtml(design)
  return (
    <div className="mc-editor">
      <div className="mc-bar">
        <fieldset className="segmented plain" aria-label={t('ed.mode')}>
          {(['visual', 'html', 'markdown'] as const).map((m) => (
            <button key={m} type="button" className={mode === m ? 'small' : 'secondary small'} aria-pressed={mode === m} onClick={() => switchTo(m)}>
              {m === 'visual' ? t('ed.visual') : m === 'html' ? 'HTML' : 'Markdown'}
            </button>
          ))}
        </fieldset>
        <VariablePicker fields={props.fields} target={target} />
      </div>
      {props.error && <div className="alert error" role="alert">{props.error}</div>}
      <PreviewAs project={props.project} subject={props.subject} body={body} testPath={props.testPath} onRendered={setAsContact} />
      {mode === 'visual' && <Visual design={design} onChange={changeDesign} body={body} target={target} project={props.project} rendered={asContact} />}
      {mode === 'markdown' && (
        <MarkdownPane design={design} body={body} target={target} rendered={asContact} onChange={(md) => changeDesign({ ...design, markdown: md })} />
      )}
      {mode === 'html' && <HtmlPane html={html} subject={props.subject} onChange={changeHtml} target={target} rendered={asContact} />}
    </div>
  )
}

/** The inside of <body> when the HTML is a whole document (a raw block sits inside a table cell). */
function bodyOf(html: string): string {
  const m = /<body[^>]*>([\s\S]*)<\/body>/i.exec(html)
  return (m ? m[1] : html).trim()
}

/** A block type in words, in the page's language. */
const blockLabel = (type: BlockType) => t(`ed.block.${type}` as MessageKey)

// ---- variable picker ----

function VariablePicker({ fields, target }: { fields: string[]; target: React.RefObject<Target | null> }) {
  const id = useId()
  const [open, setOpen] = useState(false)
  const [name, setName] = useState('')
  const [fallback, setFallback] = useState('')
  const [note, setNote] = useState('')
  const names = useMemo(() => [...new Set([...fields, ...BUILT_INS])], [fields])
  const chosen = name || names[0] || ''
  const insert = () => {
    if (!target.current) { setNote(t('ed.clickFirst')); return }
    const builtIn = BUILT_INS.includes(chosen)
    target.current.insert(builtIn || !fallback ? `{{${chosen}}}` : `{{ ${chosen} | default: "${fallback.replace(/"/g, '\'')}" }}`)
    setNote('')
    setOpen(false)
  }
  return (
    <div className="mc-picker">
      {/* onMouseDown: keep the focus (and the cursor) in the text the tag goes into */}
      <button type="button" className="secondary small" aria-expanded={open} aria-controls={`${id}-panel`} onMouseDown={(e) => e.preventDefault()} onClick={() => setOpen(!open)}>{t('ed.insertVariable')}</button>
      {open && (
        <fieldset id={`${id}-panel`} className="mc-popover" aria-label={t('ed.insertAVariable')}>
          <label htmlFor={`${id}-var`}>{t('ed.variable')}</label>
          <select id={`${id}-var`} value={chosen} onChange={(e) => setName(e.target.value)}>
            <optgroup label={t('wfc.g.fields')}>{names.filter((n) => !BUILT_INS.includes(n)).map((n) => <option key={n} value={n}>{n}</option>)}</optgroup>
            <optgroup label={t('ed.builtIn')}>{BUILT_INS.map((n) => <option key={n} value={n}>{n}</option>)}</optgroup>
          </select>
          {!BUILT_INS.includes(chosen) && (
            <>
              <label htmlFor={`${id}-fb`}>{t('ed.fallback')}</label>
              <input id={`${id}-fb`} value={fallback} onChange={(e) => setFallback(e.target.value)} placeholder={t('ed.fallbackPlaceholder')} />
            </>
          )}
          <div className="row"><button type="button" className="small" onMouseDown={(e) => e.preventDefault()} onClick={insert}>{t('ed.insert')}</button></div>
          {note && <p className="small err" role="alert">{note}</p>}
        </fieldset>
      )}
    </div>
  )
}

/** Registers a text input or textarea as the merge tags' target when it gets the focus. */
function inputTarget(target: React.RefObject<Target | null>, el: HTMLInputElement | HTMLTextAreaElement, set: (v: string) => void) {
  target.current = {
    insert: (tag) => {
      const a = el.selectionStart ?? el.value.length
      const b = el.selectionEnd ?? a
      set(el.value.slice(0, a) + tag + el.value.slice(b))
      requestAnimationFrame(() => { el.focus(); el.setSelectionRange(a + tag.length, a + tag.length) })
    },
  }
}

// ---- HTML and Markdown modes ----

function HtmlPane({ html, subject, onChange, target, rendered }: { html: string; subject: string; onChange: (h: string) => void; target: React.RefObject<Target | null>; rendered: Rendered | null }) {
  return <HtmlEditor subject={subject} body={html} onBody={onChange} onSourceFocus={(el) => inputTarget(target, el, onChange)} previewHtml={rendered?.html} />
}

function MarkdownPane({ design, body, onChange, target, rendered }: { design: Design; body: string; onChange: (md: string) => void; target: React.RefObject<Target | null>; rendered: Rendered | null }) {
  const id = useId()
  return (
    <div className="editor">
      <div className="field">
        <span><label htmlFor={id}>{t('ed.markdown')}</label></span>
        <textarea id={id} className="mono" rows={18} value={design.markdown ?? ''} onChange={(e) => onChange(e.target.value)} onFocus={(e) => inputTarget(target, e.currentTarget, onChange)} />
        <span className="hint">{t('ed.markdownHint')}</span>
      </div>
      <Preview html={body} rendered={rendered} />
    </div>
  )
}

const SAMPLE = { firstName: 'Ada', name: 'Ada', email: 'ada@example.com', unsubscribeUrl: '#unsubscribe', manageUrl: '#manage', subscribeUrl: '#subscribe' }

/**
 * The email at desktop or phone width (a sandboxed frame: no scripts): as the server renders it for the
 * contact chosen in "Preview as a contact", else filled with a sample contact (or one without data).
 */
function Preview({ html, rendered }: { html: string; rendered: Rendered | null }) {
  const [phone, setPhone] = useState(false)
  const [empty, setEmpty] = useState(false)
  return (
    <div className="field">
      <div className="mc-preview-head">
        <strong>{t('ed.preview')}</strong>
        <fieldset className="segmented plain mc-inline" aria-label={t('ed.previewWidth')}>
          <button type="button" className={phone ? 'secondary small' : 'small'} aria-pressed={!phone} onClick={() => setPhone(false)}>{t('ed.desktop')}</button>
          <button type="button" className={phone ? 'small' : 'secondary small'} aria-pressed={phone} onClick={() => setPhone(true)}>{t('ed.phone')}</button>
        </fieldset>
        {!rendered && <label className="small mc-inline"><input type="checkbox" checked={empty} onChange={(e) => setEmpty(e.target.checked)} /> {t('ed.noData')}</label>}
      </div>
      <div className={phone ? 'mc-frame phone' : 'mc-frame'}>
        <iframe title={t('ed.previewTitle')} sandbox="" srcDoc={rendered ? rendered.html : preview(html, empty ? { email: 'someone@example.com' } : SAMPLE)} className="preview" />
      </div>
    </div>
  )
}

// ---- Visual mode ----

const ADDABLE: BlockType[] = ['heading', 'text', 'button', 'image', 'divider', 'spacer', 'columns', 'social', 'footer', 'html']

function Visual({ design, onChange, body, target, project, rendered }: { design: Design; onChange: (d: Design) => void; body: string; target: React.RefObject<Target | null>; project: string; rendered: Rendered | null }) {
  const [selected, setSelected] = useState<string | null>(design.blocks[0]?.id ?? null)
  const [tab, setTab] = useState<'edit' | 'preview'>('edit')
  const dragged = useRef<string | null>(null)
  const id = useId()
  const setBlocks = (blocks: Block[]) => onChange({ ...design, blocks })
  const update = (bid: string, f: (b: Block) => Block | null) => setBlocks(mapBlocks(design.blocks, bid, f))
  const add = (type: BlockType, n?: number) => {
    const b = newBlock(type, n)
    // After the selected top-level block, else at the end.
    const at = selected ? design.blocks.findIndex((x) => x.id === selected) : -1
    const blocks = design.blocks.slice()
    blocks.splice(at >= 0 ? at + 1 : blocks.length, 0, b)
    setBlocks(blocks)
    setSelected(b.id)
  }
  const move = (bid: string, delta: number) => {
    const at = indexOf(design.blocks, bid)
    if (at) setBlocks(moveBlock(design.blocks, bid, at.index + delta))
  }
  const drop = (e: DragEvent, overId: string) => {
    e.preventDefault()
    const from = dragged.current
    dragged.current = null
    if (!from || from === overId) return
    const to = indexOf(design.blocks, overId)
    const src = indexOf(design.blocks, from)
    if (!to || !src || to.list !== src.list) return
    setBlocks(moveBlock(design.blocks, from, to.index))
  }
  const startWith = (sid: string) => {
    const s = starters().find((x) => x.id === sid)
    if (!s) return
    if (!window.confirm(t('ed.startConfirm', { name: s.name }))) return
    const d = s.make()
    onChange(d)
    setSelected(d.blocks[0]?.id ?? null)
  }
  const sel = selected ? findBlock(design.blocks, selected) : null

  const renderList = (blocks: Block[]): ReactNode => blocks.map((b) => (
    // biome-ignore lint/a11y/noStaticElementInteractions: dragging is a pointer shortcut; the Up/Down buttons do the same by keyboard
    <div key={b.id} className={`mc-block${selected === b.id ? ' selected' : ''}`} data-block={b.type}
      draggable onDragStart={(e) => { dragged.current = b.id; e.dataTransfer.effectAllowed = 'move'; e.stopPropagation() }}
      onDragOver={(e) => e.preventDefault()} onDrop={(e) => drop(e, b.id)}
      onFocusCapture={() => setSelected(b.id)} onMouseDownCapture={() => setSelected(b.id)}>
      <div className="mc-block-tools">
        <span className="mc-handle" aria-hidden="true">⠿</span>
        <button type="button" className="link small" onClick={() => setSelected(b.id)} aria-label={t('ed.selectBlock', { block: blockLabel(b.type) })}>{blockLabel(b.type)}</button>
        <span className="mc-grow" />
        <button type="button" className="secondary small" aria-label={t('ed.moveUp', { block: blockLabel(b.type) })} onClick={() => move(b.id, -1)}>↑</button>
        <button type="button" className="secondary small" aria-label={t('ed.moveDown', { block: blockLabel(b.type) })} onClick={() => move(b.id, 1)}>↓</button>
        <button type="button" className="secondary small" aria-label={t('ed.removeBlock', { block: blockLabel(b.type) })} onClick={() => { update(b.id, () => null); if (selected === b.id) setSelected(null) }}>✕</button>
      </div>
      <BlockCanvas block={b} settings={design.settings} target={target} onChange={(nb) => update(b.id, () => nb)}
        renderColumn={(col, ci) => (
          <div className="mc-col" key={ci}>
            {renderList(col)}
            <button type="button" className="secondary small" onClick={() => update(b.id, (x) => ({ ...x, columns: (x.columns ?? []).map((c, i) => (i === ci ? [...c, newBlock('text')] : c)) }))}>{t('ed.textInColumn', { n: ci + 1 })}</button>
          </div>
        )} />
    </div>
  ))

  return (
    <div className="mc-visual">
      <div className="mc-main">
        <div className="row mc-add" role="toolbar" aria-label={t('ed.addBlock')}>
          {ADDABLE.map((type) => type === 'columns'
            ? [2, 3].map((n) => <button key={`c${n}`} type="button" className="secondary small" onClick={() => add('columns', n)}>+ {t('ed.columns', { n })}</button>)
            : <button key={type} type="button" className="secondary small" onClick={() => add(type)}>+ {blockLabel(type)}</button>)}
          <select aria-label={t('ed.startFrom')} value="" onChange={(e) => startWith(e.target.value)}>
            <option value="">{t('ed.startFromOption')}</option>
            {starters().map((s) => <option key={s.id} value={s.id}>{t('ed.starterOption', { name: s.name, description: s.description })}</option>)}
          </select>
        </div>
        <fieldset className="segmented plain mc-tabs" aria-label={t('ed.canvasOrPreview')}>
          <button type="button" className={tab === 'edit' ? 'small' : 'secondary small'} aria-pressed={tab === 'edit'} onClick={() => setTab('edit')}>{t('ed.edit')}</button>
          <button type="button" className={tab === 'preview' ? 'small' : 'secondary small'} aria-pressed={tab === 'preview'} onClick={() => setTab('preview')}>{t('ed.preview')}</button>
        </fieldset>
        {tab === 'edit' ? (
          <div className="mc-canvas" style={{ background: design.settings.background }}>
            <div className="mc-paper" style={{ maxWidth: design.settings.width, background: design.settings.contentBackground, fontFamily: FONTS[design.settings.font], color: design.settings.textColor }}>
              {design.blocks.length === 0 && <p className="muted mc-empty">{t('ed.noBlocks')}</p>}
              {renderList(design.blocks)}
            </div>
          </div>
        ) : <Preview html={body} rendered={rendered} />}
      </div>
      <aside className="mc-side" aria-labelledby={`${id}-side`}>
        <h3 id={`${id}-side`}>{sel ? t('ed.blockOf', { block: blockLabel(sel.type) }) : t('ed.emailSettings')}</h3>
        {sel
          ? <BlockSettings key={sel.id} block={sel} project={project} target={target} onChange={(nb) => update(sel.id, () => nb)} />
          : <EmailSettings settings={design.settings} onChange={(s) => onChange({ ...design, settings: s })} />}
        {sel && <button type="button" className="link small" onClick={() => setSelected(null)}>{t('ed.emailSettings')}</button>}
      </aside>
    </div>
  )
}

/** A block on the canvas, looking close to the email; headings and texts are edited in place. */
function BlockCanvas({ block: b, settings, onChange, target, renderColumn }: {
  block: Block; settings: Settings; onChange: (b: Block) => void; target: React.RefObject<Target | null>
  renderColumn: (col: Block[], i: number) => ReactNode
}) {
  const st = b.style ?? {}
  const box: React.CSSProperties = {
    padding: st.padding ?? 0, background: st.background, textAlign: st.align, color: st.color ?? settings.textColor,
    fontFamily: FONTS[st.font ?? settings.font], fontSize: st.fontSize,
  }
  switch (b.type) {
    case 'heading': {
      const size = st.fontSize ?? ({ 1: 28, 2: 22, 3: 18 } as const)[b.level ?? 1]
      return <div style={box}><RichText label={t('ed.headingText')} plain value={b.text ?? ''} target={target} onChange={(text) => onChange({ ...b, text })} style={{ fontSize: size, fontWeight: 700, lineHeight: 1.25 }} /></div>
    }
    case 'text':
    case 'footer':
      return <div style={{ ...box, fontSize: st.fontSize ?? (b.type === 'footer' ? 12 : 16) }}><RichText label={b.type === 'footer' ? t('ed.footerText') : t('ed.text')} value={b.html ?? ''} target={target} onChange={(html) => onChange({ ...b, html })} /></div>
    case 'button':
      return <div style={{ ...box, background: undefined, color: undefined }}><span className="mc-button" style={{ background: st.background ?? '#2563eb', color: st.color ?? '#fff', width: st.width && st.width < 100 ? `${st.width}%` : undefined }}>{b.text}</span></div>
    case 'image':
      return <div style={box}>{b.src ? <CanvasImage key={b.src} src={b.src} alt={b.alt ?? ''} width={st.width ?? 100} /> : <div className="mc-placeholder">{t('ed.imagePlaceholder')}</div>}</div>
    case 'divider':
      return <div style={box}><hr style={{ border: 0, borderTop: `${st.fontSize ?? 1}px solid ${st.color ?? '#e5e7eb'}`, margin: 0 }} /></div>
    case 'spacer':
      return <div style={{ height: b.height ?? 24, background: st.background }} className="mc-spacer" />
    case 'social':
      return <div style={box}>{(b.links ?? []).map((l) => <span key={l.network} className="mc-pill">{l.network}</span>)}</div>
    case 'columns':
      return <div style={box} className="mc-cols">{(b.columns ?? []).map((c, i) => renderColumn(c, i))}</div>
    case 'html':
      return <div style={box}><code className="small">{t('ed.rawHtml', { count: (b.html ?? '').length })}</code></div>
  }
}

/**
 * An image of the canvas. One that does not load says so with its address: an upload's address is built
 * from MAILCTL_PUBLIC_URL, so a public URL that is not where the server is reached breaks it here and in
 * every recipient's inbox alike.
 */
function CanvasImage({ src, alt, width }: { src: string; alt: string; width: number }) {
  const [broken, setBroken] = useState(false)
  return (
    <>
      <img src={src} alt={alt} style={{ maxWidth: `${width}%`, display: 'inline-block' }} onError={() => setBroken(true)} onLoad={() => setBroken(false)} />
      {broken && (
        <p className="small err" role="alert">
          {t('ed.imageBroken', { src, origin: location.origin })}
        </p>
      )}
    </>
  )
}

/**
 * In-place text: a contentEditable region with bold, italic, link and lists (`plain`: one line of text).
 * The DOM is written from `value` only when it changed from outside, so typing keeps its cursor.
 */
function RichText({ value, onChange, label, plain, style, target }: {
  value: string; onChange: (v: string) => void; label: string; plain?: boolean; style?: React.CSSProperties; target: React.RefObject<Target | null>
}) {
  const ref = useRef<HTMLDivElement>(null)
  const range = useRef<Range | null>(null)
  /** The last value this field produced itself: the DOM already shows it. */
  const own = useRef<string | null>(null)
  useEffect(() => {
    const el = ref.current
    if (!el || value === own.current) return
    own.current = value
    if (plain) el.textContent = value
    else el.innerHTML = value
  }, [value, plain])
  const read = () => {
    const el = ref.current
    if (!el) return
    const v = plain ? (el.textContent ?? '').replace(/\u00a0/g, ' ') : el.innerHTML
    own.current = v
    onChange(v)
  }
  const remember = () => {
    const s = window.getSelection()
    if (s?.rangeCount && ref.current?.contains(s.anchorNode)) range.current = s.getRangeAt(0).cloneRange()
  }
  const focus = () => {
    target.current = {
      insert: (tag) => {
        const el = ref.current
        if (!el) return
        el.focus()
        const s = window.getSelection()
        if (s && range.current) { s.removeAllRanges(); s.addRange(range.current) }
        document.execCommand('insertText', false, tag)
        read()
      },
    }
  }
  const cmd = (name: string, arg?: string) => { ref.current?.focus(); document.execCommand(name, false, arg); read() }
  return (
    <div className="mc-rich">
      {!plain && (
        <div className="mc-rich-tools" role="toolbar" aria-label={t('ed.formatting', { label })}>
          <button type="button" className="secondary small" onMouseDown={(e) => e.preventDefault()} onClick={() => cmd('bold')} aria-label={t('ed.bold')}><b>B</b></button>
          <button type="button" className="secondary small" onMouseDown={(e) => e.preventDefault()} onClick={() => cmd('italic')} aria-label={t('ed.italic')}><i>I</i></button>
          <button type="button" className="secondary small" onMouseDown={(e) => e.preventDefault()} onClick={() => { const url = window.prompt(t('ed.linkPrompt')); if (url) cmd('createLink', url) }} aria-label={t('ed.addLink')}>{t('ed.link')}</button>
          <button type="button" className="secondary small" onMouseDown={(e) => e.preventDefault()} onClick={() => cmd('insertUnorderedList')} aria-label={t('ed.bulletedList')}>{t('ed.bulletedShort')}</button>
          <button type="button" className="secondary small" onMouseDown={(e) => e.preventDefault()} onClick={() => cmd('insertOrderedList')} aria-label={t('ed.numberedList')}>{t('ed.numberedShort')}</button>
        </div>
      )}
      {/* biome-ignore lint/a11y/useSemanticElements: a rich text field has no native element */}
      <div ref={ref} className="mc-editable" contentEditable suppressContentEditableWarning role="textbox" tabIndex={0} aria-multiline={!plain} aria-label={label}
        style={style} onInput={read} onKeyUp={remember} onMouseUp={remember} onBlur={remember} onFocus={focus}
        onKeyDown={(e) => { if (plain && e.key === 'Enter') e.preventDefault() }} />
    </div>
  )
}

function Num({ label, value, onChange, min = 0, max = 200 }: { label: string; value: number | undefined; onChange: (n: number | undefined) => void; min?: number; max?: number }) {
  const id = useId()
  return (
    <div className="field"><span><label htmlFor={id}>{label}</label></span>
      <input id={id} type="number" min={min} max={max} value={value ?? ''} onChange={(e) => onChange(e.target.value === '' ? undefined : Math.max(min, Math.min(max, Number(e.target.value))))} />
    </div>
  )
}
function Text({ label, value, onChange, type = 'text', target, hint }: { label: string; value: string; onChange: (v: string) => void; type?: string; target?: React.RefObject<Target | null>; hint?: string }) {
  const id = useId()
  return (
    <div className="field"><span><label htmlFor={id}>{label}</label></span>
      <input id={id} type={type} value={value} onChange={(e) => onChange(e.target.value)} onFocus={target ? (e) => inputTarget(target, e.currentTarget, onChange) : undefined} />
      {hint && <span className="hint">{hint}</span>}
    </div>
  )
}
function Colour({ label, value, onChange }: { label: string; value: string | undefined; onChange: (v: string | undefined) => void }) {
  const id = useId()
  return (
    <div className="field mc-colour"><span><label htmlFor={id}>{label}</label></span>
      <span className="row"><input id={id} type="color" value={value ?? '#ffffff'} onChange={(e) => onChange(e.target.value)} />
        {value !== undefined && <button type="button" className="link small" onClick={() => onChange(undefined)}>{t('ed.default')}</button>}</span>
    </div>
  )
}

function StyleFields({ style, onChange, show }: { style: BlockStyle; onChange: (s: BlockStyle) => void; show: Array<keyof BlockStyle> }) {
  const id = useId()
  const set = <K extends keyof BlockStyle>(k: K, v: BlockStyle[K]) => onChange({ ...style, [k]: v })
  return (
    <>
      {show.includes('align') && (
        <div className="field"><span id={`${id}-al`}>{t('ed.alignment')}</span>
          <fieldset className="segmented plain" aria-labelledby={`${id}-al`}>
            {(['left', 'center', 'right'] as const).map((a) => <button key={a} type="button" className={(style.align ?? 'left') === a ? 'small' : 'secondary small'} aria-pressed={(style.align ?? 'left') === a} onClick={() => set('align', a)}>{t(`ed.align.${a}`)}</button>)}
          </fieldset>
        </div>
      )}
      {show.includes('color') && <Colour label={t('ed.textColour')} value={style.color} onChange={(v) => set('color', v)} />}
      {show.includes('background') && <Colour label={t('ed.background')} value={style.background} onChange={(v) => set('background', v)} />}
      {show.includes('font') && (
        <div className="field"><span><label htmlFor={`${id}-font`}>{t('ed.font')}</label></span>
          <select id={`${id}-font`} value={style.font ?? ''} onChange={(e) => set('font', e.target.value || undefined)}>
            <option value="">{t('ed.emailFont')}</option>{Object.keys(FONTS).map((f) => <option key={f} value={f}>{fontName(f)}</option>)}
          </select>
        </div>
      )}
      {show.includes('fontSize') && <Num label={t('ed.fontSize')} value={style.fontSize} min={8} max={72} onChange={(v) => set('fontSize', v)} />}
      {show.includes('padding') && <Num label={t('ed.padding')} value={style.padding} max={96} onChange={(v) => set('padding', v)} />}
      {show.includes('width') && <Num label={t('ed.widthPercent')} value={style.width} min={10} max={100} onChange={(v) => set('width', v)} />}
    </>
  )
}

/** A font of FONTS in words (the design keeps the name: Sans, Serif, Mono, Rounded). */
function fontName(f: string): string {
  return FONTS_KNOWN.includes(f) ? t(`ed.font.${f}` as MessageKey) : f
}
const FONTS_KNOWN = ['Sans', 'Serif', 'Mono', 'Rounded']

const TEXT_STYLE: Array<keyof BlockStyle> = ['align', 'color', 'background', 'font', 'fontSize', 'padding']

function BlockSettings({ block: b, onChange, project, target }: { block: Block; onChange: (b: Block) => void; project: string; target: React.RefObject<Target | null> }) {
  const id = useId()
  const style = (show: Array<keyof BlockStyle>) => <StyleFields style={b.style ?? {}} show={show} onChange={(s) => onChange({ ...b, style: s })} />
  switch (b.type) {
    case 'heading':
      return (
        <>
          <div className="field"><span><label htmlFor={`${id}-lv`}>{t('ed.level')}</label></span>
            <select id={`${id}-lv`} value={b.level ?? 1} onChange={(e) => onChange({ ...b, level: Number(e.target.value) as 1 | 2 | 3 })}>
              <option value={1}>{t('ed.level1')}</option><option value={2}>{t('ed.level2')}</option><option value={3}>{t('ed.level3')}</option>
            </select>
          </div>
          {style(TEXT_STYLE)}
        </>
      )
    case 'text':
    case 'footer':
      return style(TEXT_STYLE)
    case 'button':
      return (
        <>
          <Text label={t('ed.buttonLabel')} value={b.text ?? ''} target={target} onChange={(text) => onChange({ ...b, text })} />
          <Text label={t('ed.buttonLink')} type="url" value={b.url ?? ''} target={target} onChange={(url) => onChange({ ...b, url })} hint={t('ed.buttonLinkHint')} />
          {style(['align', 'color', 'background', 'font', 'fontSize', 'padding', 'width'])}
        </>
      )
    case 'image':
      return <ImageSettings block={b} onChange={onChange} project={project} style={style(['align', 'padding', 'width', 'background'])} />
    case 'divider':
      return (
        <>
          <Colour label={t('ed.lineColour')} value={b.style.color} onChange={(color) => onChange({ ...b, style: { ...b.style, color } })} />
          <Num label={t('ed.thickness')} value={b.style.fontSize ?? 1} min={1} max={10} onChange={(fontSize) => onChange({ ...b, style: { ...b.style, fontSize } })} />
          {style(['padding', 'background'])}
        </>
      )
    case 'spacer':
      return <><Num label={t('ed.height')} value={b.height} min={4} max={200} onChange={(height) => onChange({ ...b, height })} />{style(['background'])}</>
    case 'columns':
      return <><p className="small muted">{t('ed.columnsHint', { n: b.columns?.length ?? 0 })}</p>{style(['padding', 'background'])}</>
    case 'social':
      return (
        <>
          {(b.links ?? []).map((l, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: links have no identity but their place
            <div key={i} className="mc-social-row">
              <Text label={t('ed.network', { n: i + 1 })} value={l.network} onChange={(network) => onChange({ ...b, links: (b.links ?? []).map((x, j) => (j === i ? { ...x, network } : x)) })} />
              <Text label={t('ed.address', { n: i + 1 })} type="url" value={l.url} onChange={(url) => onChange({ ...b, links: (b.links ?? []).map((x, j) => (j === i ? { ...x, url } : x)) })} />
              <button type="button" className="link small" onClick={() => onChange({ ...b, links: (b.links ?? []).filter((_, j) => j !== i) })}>{t('ed.removeLink', { name: l.network || t('ed.thisLink') })}</button>
            </div>
          ))}
          <button type="button" className="secondary small" onClick={() => onChange({ ...b, links: [...(b.links ?? []), { network: t('ed.def.website'), url: 'https://' }] })}>{t('ed.addLink')}</button>
          {style(['align', 'color', 'padding', 'background'])}
        </>
      )
    case 'html':
      return (
        <div className="field"><span><label htmlFor={`${id}-html`}>{t('ed.html')}</label></span>
          <textarea id={`${id}-html`} className="mono" rows={10} value={b.html ?? ''} onChange={(e) => onChange({ ...b, html: e.target.value })} onFocus={(e) => inputTarget(target, e.currentTarget, (html) => onChange({ ...b, html }))} />
          <span className="hint">{t('ed.htmlHint')}</span>
        </div>
      )
  }
}

function ImageSettings({ block: b, onChange, project, style }: { block: Block; onChange: (b: Block) => void; project: string; style: ReactNode }) {
  const id = useId()
  const [busy, setBusy] = useState(false)
  const [err, setErr] = useState('')
  const upload = async (file: File | undefined) => {
    if (!file) return
    setBusy(true); setErr('')
    try {
      const form = new FormData()
      form.append('file', file)
      const r = await call<{ url: string }>('POST', '/uploads/image', { body: form, project })
      onChange({ ...b, src: r.url, alt: b.alt || file.name.replace(/\.[a-z0-9]+$/i, '').replace(/[-_]+/g, ' ') })
    } catch (e) {
      setErr((e as Error).message)
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <div className="field"><span><label htmlFor={`${id}-up`}>{t('ed.uploadImage')}</label></span>
        <input id={`${id}-up`} type="file" accept="image/png,image/jpeg,image/gif,image/webp" disabled={busy} onChange={(e) => upload(e.target.files?.[0])} />
        {busy && <span className="hint" role="status">{t('ed.uploading')}</span>}
        {err && <span className="err" role="alert">{err}</span>}
      </div>
      <Text label={t('ed.imageAddress')} type="url" value={b.src ?? ''} onChange={(src) => onChange({ ...b, src })} />
      <Text label={t('ed.altText')} value={b.alt ?? ''} onChange={(alt) => onChange({ ...b, alt })} hint={t('ed.altHint')} />
      <Text label={t('ed.imageLink')} type="url" value={b.url ?? ''} onChange={(url) => onChange({ ...b, url })} />
      {style}
    </>
  )
}

function EmailSettings({ settings: s, onChange }: { settings: Settings; onChange: (s: Settings) => void }) {
  const id = useId()
  return (
    <>
      <Colour label={t('ed.pageBackground')} value={s.background} onChange={(v) => onChange({ ...s, background: v ?? '#f4f4f5' })} />
      <Colour label={t('ed.emailBackground')} value={s.contentBackground} onChange={(v) => onChange({ ...s, contentBackground: v ?? '#ffffff' })} />
      <Colour label={t('ed.textColour')} value={s.textColor} onChange={(v) => onChange({ ...s, textColor: v ?? '#1f2937' })} />
      <Colour label={t('ed.linkColour')} value={s.linkColor} onChange={(v) => onChange({ ...s, linkColor: v ?? '#2563eb' })} />
      <div className="field"><span><label htmlFor={`${id}-font`}>{t('ed.font')}</label></span>
        <select id={`${id}-font`} value={s.font} onChange={(e) => onChange({ ...s, font: e.target.value })}>{Object.keys(FONTS).map((f) => <option key={f} value={f}>{fontName(f)}</option>)}</select>
      </div>
      <Num label={t('ed.widthPx')} value={s.width} min={480} max={800} onChange={(v) => onChange({ ...s, width: v ?? 600 })} />
    </>
  )
}
