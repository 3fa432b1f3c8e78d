import { useQuery } from '@tanstack/react-query'
import { useEffect, useRef, useState } from 'react'
import { get } from '../api'
import type { EditorProps, EditorValue } from '../editor/editor'
import type { EditorModule, EditorHandle } from '../editor/entry'
import { ErrorBox, Loading } from './ui'
import { languageNow, t } from '../i18n'

/**
 * The email editor of the template and campaign pages. Its code is a bundle of its own
 * (web/editor.html, served at /app-editor), fetched the first time a page shows it: the dashboard's first
 * load does not carry it (bench/web-size.ts reports both). Type imports only: nothing of it is bundled here.
 */

let loading: Promise<EditorModule> | null = null

function loadEditor(): Promise<EditorModule> {
  loading ??= (async () => {
    const page = await (await fetch('/app-editor', { credentials: 'same-origin' })).text()
    const doc = new DOMParser().parseFromString(page, 'text/html')
    for (const l of doc.querySelectorAll<HTMLLinkElement>('link[rel="stylesheet"]')) {
      const link = document.createElement('link')
      link.rel = 'stylesheet'
      link.href = new URL(l.getAttribute('href') ?? '', location.origin).href
      document.head.append(link)
    }
    const src = doc.querySelector('script[src]')?.getAttribute('src')
    if (!src) throw new Error(t('ui.editorNotLoaded'))
    await import(/* @vite-ignore */ new URL(src, location.origin).href)
    const mod = (globalThis as { mailctlEditor?: EditorModule }).mailctlEditor
    if (!mod) throw new Error(t('ui.editorNotLoaded'))
    return mod
  })().catch((e) => { loading = null; throw e })
  return loading
}

interface FieldsResult { contact: Array<{ field: string }> }

/** Contact fields as merge tags: `data.plan` is `{{plan}}` in a template. */
export function useMergeFields(project: string): string[] {
  const q = useQuery({ queryKey: ['filter-fields', project], queryFn: () => get<FieldsResult>('/workflows/fields', project) })
  const names = new Set<string>(['firstName', 'lastName', 'name'])
  for (const f of q.data?.contact ?? []) if (f.field.startsWith('data.')) names.add(f.field.slice(5))
  return [...names].sort()
}

export type { EditorValue }

export function EmailEditor(props: Omit<EditorProps, 'fields'>) {
  const fields = useMergeFields(props.project)
  const el = useRef<HTMLDivElement>(null)
  const handle = useRef<EditorHandle | null>(null)
  const latest = useRef<EditorProps>({ ...props, fields })
  latest.current = { ...props, fields }
  const [error, setError] = useState<unknown>(null)
  const [ready, setReady] = useState(false)
  useEffect(() => {
    let gone = false
    loadEditor().then((mod) => {
      if (gone || !el.current) return
      handle.current = mod.mount(el.current, latest.current, languageNow())
      setReady(true)
    }, (e) => { if (!gone) setError(e) })
    return () => {
      gone = true
      const h = handle.current
      handle.current = null
      // Unmounting another root while this one renders is refused by React: after the current task.
      if (h) setTimeout(() => h.unmount(), 0)
    }
  }, [])
  useEffect(() => { handle.current?.update(latest.current) })
  return (
    <>
      {!ready && !error && <Loading label={t('ui.loadingEditor')} />}
      <ErrorBox error={error} />
      <div ref={el} />
    </>
  )
}
