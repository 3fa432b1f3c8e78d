import { Elysia } from 'elysia'
import { AppError } from '../errors'
import index from '../../web/index.html'
import editor from '../../web/editor.html'

/**
 * The web dashboard (docs/decisions.md, The dashboard): the single-page app of web/, bundled by Bun's own
 * bundler from its HTML import. Bun.serve answers `/app` and every path under it with the page (the app's
 * router reads the rest of the path) and serves the hashed JS and CSS chunks the page names; `bun build
 * --compile` bundles them ahead of time into the executable. The routes live in Bun.serve's `routes`
 * (given to Elysia's `serve` option), so `app.handle()` does not see them: only a listening server does.
 * `/app-editor` is the email editor's bundle (issue 36, web/editor.html): the template and campaign pages
 * read the page for its script and stylesheet and load them, so the first load of /app/ does not carry it.
 */
export const dashboardAssets = { '/app': index, '/app/*': index, '/app-editor': editor }

/**
 * Bun.serve options for the dashboard. `development: false` bundles the page once, minified, with React's
 * production build, also when running from the source tree (`npm start`); the first request to /app/
 * waits for that bundle.
 */
export const dashboardServe = { routes: dashboardAssets, development: false }

/** `GET /`: a browser (Accept: text/html) is sent to the dashboard; an API client still gets the 404 envelope. */
export function dashboardRoutes() {
  return new Elysia().get('/', ({ request, set }) => {
    if ((request.headers.get('accept') ?? '').includes('text/html')) {
      set.status = 302
      set.headers.location = '/app/'
      return ''
    }
    throw new AppError('NOT_FOUND', 'No route for GET /')
  }, { detail: { hide: true } })
}
