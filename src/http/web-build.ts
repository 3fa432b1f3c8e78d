import { brotliCompressSync, constants as zlib } from 'node:zlib'
import { resolve } from 'node:path'

/**
 * The dashboard's bundle: web/index.html built by Bun's bundler with code splitting, so
 * each page's code is a chunk of its own that the router loads when the page is first opened. Every file is
 * kept raw, gzip- and brotli-compressed, compressed once (at `npm run build` for the executable, on the
 * first request from the source tree); the server answers the encoding the browser accepts.
 */

/** Where the page's chunks are served; their names carry a content hash, so they are cached for good. */
export const ASSETS_PATH = '/app-assets/'

export type Bytes = Uint8Array<ArrayBuffer>
export interface WebFile { type: string; raw: Bytes; gzip: Bytes; br: Bytes }
export interface WebBundle {
  /** The page (web/index.html) with the chunks' addresses filled in. */
  shell: WebFile
  /** The chunks by file name (no directory). */
  files: Map<string, WebFile>
}

const TYPES: Record<string, string> = {
  js: 'text/javascript;charset=utf-8', css: 'text/css;charset=utf-8', html: 'text/html;charset=utf-8',
  svg: 'image/svg+xml', png: 'image/png', woff2: 'font/woff2', json: 'application/json',
}

export function typeOf(name: string): string {
  return TYPES[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream'
}

export function compress(type: string, raw: Bytes): WebFile {
  return {
    type, raw,
    gzip: Bun.gzipSync(raw, { level: 9 }),
    br: new Uint8Array(brotliCompressSync(raw, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: raw.byteLength } })),
  }
}

/** Bundles web/<page> (minified, React's production build, split by dynamic import). */
export async function bundleWeb(page = 'index.html'): Promise<{ shell: Bytes; chunks: Map<string, Bytes> }> {
  const built = await Bun.build({
    entrypoints: [resolve(import.meta.dir, '..', '..', 'web', page)],
    minify: true, target: 'browser', splitting: true, publicPath: ASSETS_PATH,
    naming: { entry: '[name].[ext]', chunk: '[name]-[hash].[ext]', asset: '[name]-[hash].[ext]' },
    define: { 'process.env.NODE_ENV': '"production"' },
  })
  if (!built.success) throw new AggregateError(built.logs, 'the dashboard bundle failed')
  let shell: Bytes | null = null
  const chunks = new Map<string, Bytes>()
  for (const o of built.outputs) {
    const name = o.path.replace(/^\.\//, '')
    const bytes = new Uint8Array(await o.arrayBuffer())
    if (name === page) shell = bytes
    else chunks.set(name, bytes)
  }
  if (!shell) throw new Error(`the dashboard bundle has no ${page}`)
  return { shell, chunks }
}

export async function buildWeb(): Promise<WebBundle> {
  const { shell, chunks } = await bundleWeb()
  const files = new Map<string, WebFile>()
  for (const [name, bytes] of chunks) files.set(name, compress(typeOf(name), bytes))
  return { shell: compress(TYPES.html, shell), files }
}

const decoder = new TextDecoder()

/**
 * The files the page loads before it shows anything: the scripts and stylesheets the HTML names and,
 * transitively, the chunks their static `import` statements name (a page's chunk, loaded by a dynamic
 * `import()`, is not among them). What bench/web-size.ts adds up.
 */
export function firstLoad(shell: Bytes, files: Map<string, Bytes>): string[] {
  const seen = new Set<string>()
  const html = decoder.decode(shell)
  const queue = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])
  while (queue.length > 0) {
    const ref = queue.shift() as string
    const name = ref.slice(ref.lastIndexOf('/') + 1)
    if (seen.has(name) || !files.has(name)) continue
    seen.add(name)
    if (!name.endsWith('.js')) continue
    const code = decoder.decode(files.get(name))
    // Static imports only: `import{a}from"./x.js"`, `import"./x.js"`, `export{a}from"./x.js"`.
    for (const m of code.matchAll(/(?:\bimport|\bexport)\s*(?:[\w*${}\s,]*?\bfrom\s*)?["']([^"']+\.js)["']/g)) queue.push(m[1])
  }
  return [...seen]
}
