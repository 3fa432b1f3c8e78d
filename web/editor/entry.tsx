import { createRoot } from 'react-dom/client'
import { addCatalogue, adoptLanguage, type languageNow } from '../i18n'
import { editorDe } from '../i18n/editor-de'
import { editorEn } from '../i18n/editor-en'
import { EmailEditor, type EditorProps } from './editor'
import './editor.css'

/**
 * The editor's own bundle (web/editor.html, served at /app-editor): loaded by the template and campaign
 * pages only (web/components/email-editor.tsx), so the dashboard's first load does not carry it. It renders
 * into its own React root and publishes `mount` on `globalThis.mailctlEditor`.
 */
export interface EditorHandle { update: (p: EditorProps) => void; unmount: () => void }
/** `language`: the page's language and catalogue (this bundle has its own copy of the catalogue module, which would start in English). */
export interface EditorModule { mount: (el: HTMLElement, p: EditorProps, language?: ReturnType<typeof languageNow>) => EditorHandle }

// The editor's own messages (not in the dashboard's first load) join the page's catalogue.
addCatalogue({ en: editorEn, de: editorDe })

const api: EditorModule = {
  mount(el, p, language) {
    if (language) adoptLanguage(language)
    // Its own prefix for useId: the page's root makes ids too, and a label of one root must never name a field of the other.
    const root = createRoot(el, { identifierPrefix: 'ed-' })
    root.render(<EmailEditor {...p} />)
    return { update: (next) => root.render(<EmailEditor {...next} />), unmount: () => root.unmount() }
  },
}
;(globalThis as { mailctlEditor?: EditorModule }).mailctlEditor = api
