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
  /**
   * The page again for each area of pages (`contacts`, the directory under web/pages/), naming that area's
   * chunks as module preloads: the browser fetches them with the entry script instead of one round trip
   * after it (the router's `import()`) and another after that (the chunk's own imports).
   */
  pages: Map<string, WebFile>
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

interface Metafile { outputs: Record<string, { entryPoint?: string; imports?: Array<{ path: string; kind: string }> }> }

/**
 * Bundles web/<page> (minified, React's production build, split by dynamic import). `areas` names, for each
 * area of pages the router loads by `import()` (web/pages/<area>/index.tsx), its chunk and the chunks that
 * one imports statically, transitively: what opening a page of the area loads.
 */
export async function bundleWeb(page = 'index.html'): Promise<{ shell: Bytes; chunks: Map<string, Bytes>; areas: Map<string, string[]> }> {
  const built = await Bun.build({
    entrypoints: [resolve(import.meta.dir, '..', '..', 'web', page)], metafile: true,
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
  const meta = (typeof built.metafile === 'string' ? JSON.parse(built.metafile) : built.metafile) as Metafile | undefined
  if (!meta?.outputs) throw new Error('the dashboard bundle has no metafile')
  const outputs = new Map(Object.entries(meta.outputs).map(([path, o]) => [path.replace(/^\.\//, ''), o]))
  const areas = new Map<string, string[]>()
  for (const [name, o] of outputs) {
    const area = /^web\/pages\/([^/]+)\/index\.tsx?$/.exec(o.entryPoint ?? '')?.[1]
    if (!area || !name.endsWith('.js')) continue
    const seen: string[] = []
    const queue = [name]
    while (queue.length > 0) {
      const next = queue.shift() as string
      if (seen.includes(next)) continue
      seen.push(next)
      for (const i of outputs.get(next)?.imports ?? []) if (i.kind === 'import-statement') queue.push(i.path.replace(/^\.\//, ''))
    }
    areas.set(area, seen)
  }
  return { shell, chunks, areas }
}

/** The page with `<link rel="modulepreload">` for each of `names` it does not name yet, before </head>. */
export function withPreloads(shell: Bytes, names: string[]): Bytes {
  const html = decoder.decode(shell)
  const links = names.filter((n) => !html.includes(`${ASSETS_PATH}${n}"`))
    .map((n) => `<link rel="modulepreload" crossorigin href="${ASSETS_PATH}${n}">`).join('')
  return new TextEncoder().encode(html.replace('</head>', `${links}</head>`)) as Bytes
}

export async function buildWeb(): Promise<WebBundle> {
  const { shell, chunks, areas } = await bundleWeb()
  const files = new Map<string, WebFile>()
  for (const [name, bytes] of chunks) files.set(name, compress(typeOf(name), bytes))
  const pages = new Map<string, WebFile>()
  for (const [area, names] of areas) pages.set(area, compress(TYPES.html, withPreloads(shell, names)))
  return { shell: compress(TYPES.html, shell), pages, files }
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
