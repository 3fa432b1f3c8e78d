/**
 * The dashboard's first-load budget (issue 15): the JS and CSS that /app/ loads, bundled the way the
 * server bundles it (Bun's bundler, minified, production React), must stay within 300 KB gzip-compressed.
 * `npm run build` runs this first and prints the figure; it exits 1 over budget. It also prints the email
 * editor's own bundle (web/editor.html), which the first load does not include.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

export const BUDGET_BYTES = 300 * 1024

export interface WebSize { files: Array<{ name: string; raw: number; gzip: number }>; raw: number; gzip: number }

/**
 * The JS and CSS of one page of web/: `index.html` is the first load; `editor.html` the email editor's
 * bundle, which only the template and campaign pages load (issue 36).
 */
export async function measureWebBundle(page = 'index.html'): Promise<WebSize> {
  const out = mkdtempSync(join(tmpdir(), 'mailctl-web-'))
  try {
    const built = await Bun.build({
      entrypoints: [resolve(import.meta.dir, '..', 'web', page)],
      outdir: out, minify: true, target: 'browser',
      define: { 'process.env.NODE_ENV': '"production"' },
    })
    if (!built.success) throw new AggregateError(built.logs, 'the dashboard bundle failed')
    const files: WebSize['files'] = []
    for (const o of built.outputs) {
      if (!/\.(js|css)$/.test(o.path)) continue
      const bytes = new Uint8Array(await o.arrayBuffer())
      files.push({ name: o.path.slice(out.length + 1), raw: bytes.byteLength, gzip: Bun.gzipSync(bytes, { level: 9 }).byteLength })
    }
    return { files, raw: files.reduce((s, f) => s + f.raw, 0), gzip: files.reduce((s, f) => s + f.gzip, 0) }
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const size = await measureWebBundle()
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`
  for (const f of size.files) console.log(`dashboard ${f.name.padEnd(28)} ${kb(f.raw).padStart(10)} raw ${kb(f.gzip).padStart(10)} gzip`)
  console.log(`dashboard first load: ${kb(size.gzip)} gzip of JS+CSS (${kb(size.raw)} raw); budget ${kb(BUDGET_BYTES)}`)
  const editor = await measureWebBundle('editor.html')
  for (const f of editor.files) console.log(`editor    ${f.name.padEnd(28)} ${kb(f.raw).padStart(10)} raw ${kb(f.gzip).padStart(10)} gzip`)
  console.log(`email editor (template and campaign pages only): ${kb(editor.gzip)} gzip of JS+CSS (${kb(editor.raw)} raw), not in the first load`)
  if (size.gzip > BUDGET_BYTES) {
    console.error(`error: the dashboard's first load is over its budget by ${kb(size.gzip - BUDGET_BYTES)}`)
    process.exit(1)
  }
}
