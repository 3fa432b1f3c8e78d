import { Elysia } from 'elysia'
import { brotliCompressSync, constants as zlib } from 'node:zlib'
import type { Deps } from '../deps'
import { AppError } from '../errors'
import { SESSION_COOKIE } from './auth'
import { type Boot, bootBlock, bootFor } from './dashboard-boot'
import { contactsFirstView, escapeHtml, firstViewTitle, type View, viewOf } from './dashboard-first-view'
import editor from '../../web/editor.html'
import { ASSETS_PATH, buildWeb, type Bytes, type WebBundle, type WebFile } from './web-build'

/**
 * The web dashboard (docs/decisions.md, The dashboard): the single-page app of web/, split by page
 *. `web-build.ts` bundles web/index.html with Bun's bundler and compresses every file;
 * `/app` and every path under it answer the page with the browser headers below, `/app-assets/<name>` its
 * hashed chunks (brotli or gzip by Accept-Encoding, cached for good). From the source tree the bundle is
 * built on the first request; the executable carries it prebuilt (scripts/build-web.ts, run by
 * `npm run build`), compressed at build time.
 * `/app-editor` is the email editor's bundle (web/editor.html), a Bun HTML import that Bun.serve
 * answers: the template and campaign pages read that page for its script and stylesheet and load them.
 */
export const dashboardAssets = { '/app-editor': editor }

/** Bun.serve options for the dashboard: the editor's HTML import, bundled once, minified. */
export const dashboardServe = { routes: dashboardAssets, development: false }

const COMPILED = import.meta.url.includes('/$bunfs/')

let bundle: Promise<WebBundle> | null = null

/** The bundle, once per process (again after a failure): prebuilt in the executable, else built now. */
export function webBundle(): Promise<WebBundle> {
  bundle ??= (COMPILED ? prebuiltWeb() : buildWeb())
  bundle.catch(() => { bundle = null })
  return bundle
}

/** The executable's bundle, embedded by scripts/build-web.ts's generated manifest. */
async function prebuiltWeb(): Promise<WebBundle> {
  const { manifest } = await import('../../dist/web/manifest')
  const read = async (f: { raw: string; gzip: string; br: string }, type: string): Promise<WebFile> => ({
    type, raw: await Bun.file(f.raw).bytes(), gzip: await Bun.file(f.gzip).bytes(), br: await Bun.file(f.br).bytes(),
  })
  const files = new Map<string, WebFile>()
  for (const f of manifest.files) files.set(f.name, await read(f, f.type))
  const pages = new Map<string, WebFile>()
  for (const p of manifest.pages) pages.set(p.area, await read(p, 'text/html;charset=utf-8'))
  return { shell: await read(manifest.shell, 'text/html;charset=utf-8'), pages, files }
}

/** The area of pages (web/pages/<area>) of each first segment of a project's path, as web/main.tsx routes them. */
const PROJECT_AREAS: Record<string, string> = {
  '': 'projects', settings: 'projects', keys: 'projects', members: 'projects',
  contacts: 'contacts', segments: 'segments', templates: 'templates', campaigns: 'campaigns', workflows: 'workflows',
  domains: 'domains', analytics: 'analytics', security: 'analytics', usage: 'analytics',
  activity: 'mail', emails: 'mail', suppressions: 'mail', tools: 'tools', webhooks: 'webhooks',
}

/**
 * The area whose chunks the page at `path` will load first, to name them as preloads: the sign-in pages
 * without a session cookie (whether the session is still valid is the API's to say; a wrong guess only
 * costs a chunk fetched for nothing), else the page's own area. None for /app/ itself (it redirects).
 */
export function areaOf(path: string, signedIn: boolean): string | null {
  if (!signedIn) return 'auth'
  const rest = path.replace(/^\/app\/?/, '')
  const project = /^p\/[^/]+\/?([^/]*)/.exec(rest)
  if (project) return PROJECT_AREAS[project[1]] ?? null
  if (rest.startsWith('invitations')) return 'invitations'
  if (rest.startsWith('projects/new')) return 'projects'
  if (rest.startsWith('verify-email')) return 'auth'
  return null
}

/** The encoding the request accepts, smallest first: brotli, gzip, none. */
function acceptedCoding(request: Request): 'br' | 'gzip' | null {
  const accept = (request.headers.get('accept-encoding') ?? '').toLowerCase()
  const takes = (name: string) => accept.split(',').some((p) => {
    const [coding, ...params] = p.trim().split(';')
    return coding.trim() === name && !params.some((x) => /^\s*q=0(\.0*)?\s*$/.test(x))
  })
  return takes('br') ? 'br' : takes('gzip') ? 'gzip' : null
}

/** `file` in the encoding the request accepts (acceptedCoding). */
function encoded(request: Request, file: WebFile, headers: Record<string, string>): Response {
  const h: Record<string, string> = { ...headers, 'content-type': file.type, vary: 'accept-encoding' }
  const coding = acceptedCoding(request)
  if (coding === 'br') return new Response(file.br, { headers: { ...h, 'content-encoding': 'br' } })
  if (coding === 'gzip') return new Response(file.gzip, { headers: { ...h, 'content-encoding': 'gzip' } })
  return new Response(file.raw, { headers: h })
}

/** A page made for one request: compressed only in the encoding that request accepts. */
function encodedOnce(request: Request, type: string, raw: Bytes, headers: Record<string, string>): Response {
  const h: Record<string, string> = { ...headers, 'content-type': type, vary: 'accept-encoding' }
  const coding = acceptedCoding(request)
  if (coding === 'br') {
    const br = brotliCompressSync(raw, { params: { [zlib.BROTLI_PARAM_QUALITY]: 5, [zlib.BROTLI_PARAM_SIZE_HINT]: raw.byteLength } })
    return new Response(new Uint8Array(br), { headers: { ...h, 'content-encoding': 'br' } })
  }
  if (coding === 'gzip') return new Response(Bun.gzipSync(raw, { level: 6 }), { headers: { ...h, 'content-encoding': 'gzip' } })
  return new Response(raw, { headers: h })
}

/**
 * The dashboard's Content-Security-Policy: scripts only from this server (an injected inline script or
 * handler never runs, nor does eval), no plugins, no framing by anyone (with X-Frame-Options for old
 * browsers), no <base> or form posts elsewhere, API calls to this server only. Styles may be inline (React
 * style attributes; the email previews), images and fonts come from anywhere (a template's images), and
 * the previews' srcdoc frames inherit all of this.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline' https:",
  'img-src * data: blob:',
  "font-src 'self' data: https:",
  "connect-src 'self'",
  "frame-src 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ')

export const DASHBOARD_HEADERS: Record<string, string> = {
  'cache-control': 'no-cache',
  'content-security-policy': DASHBOARD_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
}

/**
 * The page with a signed-in user's data in it (dashboard-boot.ts): for that session only, so no cache,
 * shared or private, keeps it (a shared one could hand it to another user; the browser's own could show it
 * after sign-out).
 */
export const PERSONAL_PAGE_HEADERS: Record<string, string> = { ...DASHBOARD_HEADERS, 'cache-control': 'private, no-store' }

/**
 * The page for a signed-in user (it differs per request; encodedOnce compresses it): their data block
 * (dashboard-boot.ts) before </body> and, on the contacts page, its first view (dashboard-first-view.ts)
 * before the app's root, in their language and theme, with the stylesheet inline so that the rows are
 * drawn before any other file arrives; for a German viewer, the German catalogue's chunk as a preload.
 */
function personalPage(bundle: WebBundle, page: WebFile, boot: Boot, view: View): Bytes {
  let html = new TextDecoder().decode(page.raw)
  const first = contactsFirstView(boot, view)
  const link = /<link rel="stylesheet" crossorigin href="\/app-assets\/([^"]+\.css)">/.exec(html)
  const css = link ? new TextDecoder().decode(bundle.files.get(link[1])?.raw) : ''
  if (first && link && css && !/<\/style/i.test(css)) {
    html = html.replace('<html lang="en">', `<html lang="${view.lang}"${view.theme ? ` data-theme="${view.theme}"` : ''}>`)
      .replace(link[0], () => `<style>${css}</style>`)
      .replace('<div id="root">', () => `${first}<div id="root">`)
    const title = firstViewTitle(boot, view)
    if (title) html = html.replace('<title>mailctl</title>', () => `<title>${escapeHtml(title)}</title>`)
  }
  // German is a chunk the app loads before its first render: named with the rest rather than a round trip after them.
  const german = view.lang === 'de' ? [...bundle.files.keys()].find((n) => /^de-[a-z0-9]+\.js$/.test(n)) : undefined
  if (german) html = html.replace('</head>', () => `<link rel="modulepreload" crossorigin href="${ASSETS_PATH}${german}"></head>`)
  html = html.replace('</body>', () => `${bootBlock(boot)}</body>`)
  return new TextEncoder().encode(html) as Bytes
}

export const ASSET_HEADERS: Record<string, string> = {
  'cache-control': 'public, max-age=31536000, immutable',
  'x-content-type-options': 'nosniff',
}

/**
 * `/app`, `/app/*`: the page with its headers; `/app-assets/:name`: its chunks; `GET /`: a browser is sent
 * to /app/, an API client gets the 404 envelope.
 */
export function dashboardRoutes(deps: Deps) {
  const page = async ({ request }: { request: Request }): Promise<Response> => {
    const bundle = await webBundle()
    const signedIn = new RegExp(`(?:^|;\\s*)${SESSION_COOKIE}=`).test(request.headers.get('cookie') ?? '')
    const path = new URL(request.url).pathname
    const area = areaOf(path, signedIn)
    const file = (area && bundle.pages.get(area)) || bundle.shell
    const boot = signedIn ? await bootFor(deps, request, path) : null
    if (!boot) return encoded(request, file, DASHBOARD_HEADERS)
    return encodedOnce(request, file.type, personalPage(bundle, file, boot, viewOf(request)), PERSONAL_PAGE_HEADERS)
  }
  return new Elysia()
    .get('/app', page, { detail: { hide: true } })
    .get('/app/*', page, { detail: { hide: true } })
    .get(`${ASSETS_PATH}:name`, async ({ request, params }) => {
      const file = (await webBundle()).files.get(params.name)
      if (!file) throw new AppError('NOT_FOUND', `No dashboard file ${params.name}`)
      return encoded(request, file, ASSET_HEADERS)
    }, { detail: { hide: true } })
    .get('/', ({ request, set }) => {
      if ((request.headers.get('accept') ?? '').includes('text/html')) {
        set.status = 302
        set.headers.location = '/app/'
        return ''
      }
      throw new AppError('NOT_FOUND', 'No route for GET /')
    }, { detail: { hide: true } })
}
