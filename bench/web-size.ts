/**
 * The dashboard's first-load budget (150 KB): the JS and CSS that /app/ loads before
 * it shows anything, bundled the way the server bundles it (src/http/web-build.ts: Bun's bundler, minified,
 * production React, split by page), must stay within 150 KB gzip-compressed. The pages' own chunks,
 * loaded when a page is opened, are listed apart (bench/web-3g.ts times a page opened on a slow network).
 * `npm run build` runs this first and prints the figure; it exits 1 over budget. It also prints the email
 * editor's own bundle (web/editor.html), which the first load does not include.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { bundleWeb, firstLoad } from '../src/http/web-build'

export const BUDGET_BYTES = 150 * 1024

export interface WebSize { files: Array<{ name: string; raw: number; gzip: number }>; raw: number; gzip: number }

const gz = (b: Uint8Array<ArrayBuffer>) => Bun.gzipSync(b, { level: 9 }).byteLength

/** The dashboard's first load (`files`, the sums) and the chunks loaded later (`later`). */
export async function measureDashboard(): Promise<WebSize & { later: WebSize['files'] }> {
  const { shell, chunks } = await bundleWeb()
  const first = new Set(firstLoad(shell, chunks))
  const files: WebSize['files'] = []
  const later: WebSize['files'] = []
  for (const [name, bytes] of chunks) {
    if (!/\.(js|css)$/.test(name)) continue
    ;(first.has(name) ? files : later).push({ name, raw: bytes.byteLength, gzip: gz(bytes) })
  }
  return { files, later, raw: files.reduce((s, f) => s + f.raw, 0), gzip: files.reduce((s, f) => s + f.gzip, 0) }
}

/** The JS and CSS of the email editor's bundle (web/editor.html), which only the template and campaign pages load. */
export async function measureWebBundle(page = 'editor.html'): Promise<WebSize> {
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
      files.push({ name: o.path.slice(out.length + 1), raw: bytes.byteLength, gzip: gz(bytes) })
    }
    return { files, raw: files.reduce((s, f) => s + f.raw, 0), gzip: files.reduce((s, f) => s + f.gzip, 0) }
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const size = await measureDashboard()
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`
  for (const f of size.files) console.log(`dashboard ${f.name.padEnd(28)} ${kb(f.raw).padStart(10)} raw ${kb(f.gzip).padStart(10)} gzip`)
  console.log(`dashboard first load: ${kb(size.gzip)} gzip of JS+CSS (${kb(size.raw)} raw); budget ${kb(BUDGET_BYTES)}`)
  for (const f of size.later) console.log(`  later   ${f.name.padEnd(28)} ${kb(f.raw).padStart(10)} raw ${kb(f.gzip).padStart(10)} gzip`)
  const editor = await measureWebBundle('editor.html')
  for (const f of editor.files) console.log(`editor    ${f.name.padEnd(28)} ${kb(f.raw).padStart(10)} raw ${kb(f.gzip).padStart(10)} gzip`)
  console.log(`email editor (template and campaign pages only): ${kb(editor.gzip)} gzip of JS+CSS (${kb(editor.raw)} raw), not in the first load`)
  if (size.gzip > BUDGET_BYTES) {
    console.error(`error: the dashboard's first load is over its budget by ${kb(size.gzip - BUDGET_BYTES)}`)
    process.exit(1)
  }
}
