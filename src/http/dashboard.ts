import { Elysia } from 'elysia'
import { AppError } from '../errors'
import index from '../../web/index.html'
import editor from '../../web/editor.html'

/**
 * The web dashboard (docs/decisions.md, The dashboard): the single-page app of web/, bundled by Bun's own
 * bundler from its HTML import; `bun build --compile` bundles it ahead of time into the executable.
 *
 * Bun.serve serves the bundle (its `routes`, given to Elysia's `serve` option) and the hashed JS and CSS
 * chunks the page names, but it cannot add headers to an HTML import's answer. So the bundle's page sits
 * at a path that is random per process (nobody outside can frame or load it), and `/app` and every path
 * under it are Elysia routes answering that page, fetched once from this very server, with the browser
 * headers below. `app.handle()` does not see Bun.serve's routes: only a listening server serves /app.
 * `/app-editor` is the email editor's bundle (issue 36, web/editor.html): the template and campaign pages
 * read the page for its script and stylesheet and load them, so the first load of /app/ does not carry it.
 */
const SHELL_PATH = `/_dashboard-${crypto.randomUUID()}`
export const dashboardAssets = { [SHELL_PATH]: index, '/app-editor': editor }

/**
 * Bun.serve options for the dashboard. `development: false` bundles the page once, minified, with React's
 * production build, also when running from the source tree (`npm start`); the first request to /app/
 * waits for that bundle.
 */
export const dashboardServe = { routes: dashboardAssets, development: false }

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
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-cache',
  'content-security-policy': DASHBOARD_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
}

/**
 * The bundled page, per server (a server sets up the chunk routes of its bundle when its bundle route is
 * first asked for, so each server fetches its own), once; again after a failure.
 */
const shells = new WeakMap<object, Promise<string>>()
function loadShell(server: { url: URL }): Promise<string> {
  let shell = shells.get(server)
  if (!shell) {
    shell = fetch(new URL(SHELL_PATH, server.url)).then(async (res) => {
      if (!res.ok) throw new Error(`the dashboard bundle answered ${res.status}`)
      return res.text()
    })
    shell.catch(() => shells.delete(server))
    shells.set(server, shell)
  }
  return shell
}

/** `/app`, `/app/*`: the page with its headers; `GET /`: a browser is sent to /app/, an API client gets the 404 envelope. */
export function dashboardRoutes() {
  const page = async ({ server }: { server: { url: URL } | null }): Promise<Response> => {
    if (!server) throw new AppError('NOT_FOUND', 'The dashboard is served by a listening server only')
    return new Response(await loadShell(server), { headers: DASHBOARD_HEADERS })
  }
  return new Elysia()
    .get('/app', page, { detail: { hide: true } })
    .get('/app/*', page, { detail: { hide: true } })
    .get('/', ({ request, set }) => {
      if ((request.headers.get('accept') ?? '').includes('text/html')) {
        set.status = 302
        set.headers.location = '/app/'
        return ''
      }
      throw new AppError('NOT_FOUND', 'No route for GET /')
    }, { detail: { hide: true } })
}
