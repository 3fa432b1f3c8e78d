import { createRoot } from 'react-dom/client'
import { EmailEditor, type EditorProps } from './editor'
import './editor.css'

/**
 * The editor's own bundle (web/editor.html, served at /app-editor): loaded by the template and campaign
 * pages only (web/components/email-editor.tsx), so the dashboard's first load does not carry it. It renders
 * into its own React root and publishes `mount` on `globalThis.mailctlEditor`.
 */
export interface EditorHandle { update: (p: EditorProps) => void; unmount: () => void }
export interface EditorModule { mount: (el: HTMLElement, p: EditorProps) => EditorHandle }

const api: EditorModule = {
  mount(el, p) {
    // Its own prefix for useId: the page's root makes ids too, and a label of one root must never name a field of the other.
    const root = createRoot(el, { identifierPrefix: 'ed-' })
    root.render(<EmailEditor {...p} />)
    return { update: (next) => root.render(<EmailEditor {...next} />), unmount: () => root.unmount() }
  },
}
;(globalThis as { mailctlEditor?: EditorModule }).mailctlEditor = api
