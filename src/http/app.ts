import { Elysia, type Context, type ValidationError } from 'elysia'
import { Kind } from '@sinclair/typebox'
import { registerFormats } from './formats'
import type { Deps } from '../deps'
import { AppError, badRequest, tooLarge, validation } from '../errors'
import { errorFields } from '../log'
import { storageError } from '../db/failures'
import { LostRaceError } from '../db/group-commit'
import { checkDataLimits } from '../modules/contacts/data'
import { unstorableRequest } from './text'
import { MAX_BODY_DEPTH, tooDeepBranch } from './depth'
import { envelope, fromValidation } from './errors'
import { holdsUnconfirmedKey, staleKeyRefusal } from './auth'
import { systemRoutes } from './system'
import { metricsRoutes } from './metrics'
import { counter, histogram } from '../metrics'
import { authRoutes } from '../modules/auth/routes'
import { usersRoutes } from '../modules/users/routes'
import { projectsRoutes } from '../modules/projects/routes'
import { invitationsRoutes, membersRoutes } from '../modules/members/routes'
import { configRoutes } from '../modules/config/routes'
import { renderDocs, type OpenApiDoc } from './docs'
import { openApiDocument } from './openapi'
import { contactsRoutes } from '../modules/contacts/routes'
import { eventsRoutes, trackRoutes } from '../modules/events/routes'
import { verifyRoutes } from '../modules/verify/routes'
import { subscriptionRoutes } from '../modules/subscriptions/routes'
import { domainsRoutes } from '../modules/domains/routes'
import { templatesRoutes } from '../modules/templates/routes'
import { segmentsRoutes } from '../modules/segments/routes'
import { campaignsRoutes } from '../modules/campaigns/routes'
import { workflowsRoutes } from '../modules/workflows/routes'
import { trackingRoutes } from '../modules/tracking/routes'
import { webhooksRoutes } from '../modules/webhooks/routes'
import { activityRoutes } from '../modules/activity/routes'
import { analyticsRoutes } from '../modules/analytics/routes'
import { billingRoutes } from '../modules/billing/routes'
import { uploadsRoutes } from '../modules/uploads/routes'
import { securityRoutes } from '../modules/security/routes'
import { emailsRoutes } from '../modules/emails/routes'
import { suppressionsRoutes } from '../modules/suppressions/routes'
import { hooksRoutes } from '../modules/hooks/routes'
import { dashboardRoutes, dashboardServe } from './dashboard'
import { corsAnswerHeaders, corsRoutes } from './cors'
import { bodyCap, bodyCaps, capBody, hasOwnParser, NotABodyError, overCap, readsNothing } from './bodies'

// After every import above (./openapi loads @elysiajs/openapi, which registers zod checks): ours win (./formats).
registerFormats()

/**
 * The request id and start time, kept on the request's `set` object (shared by every hook of a request).
 * Hooks take their context destructured: Elysia reads which fields a hook uses from its parameter list, and
 * a hook taking the whole context makes it prepare everything (cookies included) for every request.
 */
const REQ = Symbol('mailctl.request')
/** A body cut at its cap (src/http/bodies.ts), thrown again where a parser swallowed it. */
const OVER_CAP = Symbol('mailctl.overCap')
interface Tracked { [REQ]?: { id: string; start: number }; [OVER_CAP]?: AppError }

function requestId(set: object): string {
  return (set as Tracked)[REQ]?.id ?? 'unknown'
}

/** HTTP requests by method, route and status, and their latency (GET /metrics). */
const httpMetrics = (() => {
  const requests = counter('mailctl_http_requests_total', 'HTTP requests by method, route and status', ['method', 'route', 'status'])
  const seconds = histogram('mailctl_http_request_duration_seconds', 'HTTP request latency by method and route', ['method', 'route'], [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
  return {
    observe(method: string, route: string, status: number, s: number) {
      requests.inc({ method, route, status: String(status) })
      seconds.observe({ method, route }, s)
    },
  }
})()

/** The path of a request URL without building a URL object. */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return '/'
  const q = url.indexOf('?', start)
  return q < 0 ? url.slice(start) : url.slice(start, q)
}

/** The document's own parts: GET /openapi.json adds the routes (src/http/openapi.ts). */
const DOCUMENTATION = {
  info: { title: 'mailctl API', version: '0.1.0', description: 'The HTTP API of mailctl, a self-hosted email platform: contacts, events, templates, segments, campaigns and transactional sending. It is compatible with Plunk\'s API, so the official SDK (`@plunk/node`) works with `baseUrl` set to this server\'s `/v1/`. Project API keys go in `Authorization: Bearer <key>`: the secret key (`sk_...`) for everything, the public key (`pk_...`) only for `POST /v1/track`.' },
  components: {
    securitySchemes: {
      secretKey: { type: 'http', scheme: 'bearer', description: 'Project secret key, sk_...' },
      publicKey: { type: 'http', scheme: 'bearer', description: 'Project public key, pk_... (POST /v1/track only)' },
      session: { type: 'apiKey', in: 'cookie', name: 'mailctl_session' },
      projectId: { type: 'apiKey', in: 'header', name: 'X-Project-Id', description: 'The dashboard: with the session cookie, the project acted on (in place of a secret key)' },
    },
  },
}

/**
 * The Elysia root: request ids, the error envelope, body limits, request logs, OpenAPI, then the routes
 * of every module. Modules build their routes with `authPlugin(deps)` and are mounted here.
 */
export function buildApp(deps: Deps) {
  const log = deps.log
  // GET /docs: rendered once from /openapi.json into self-contained HTML (no CDN: works offline).
  let docs: Promise<string> | null = null
  let spec: Record<string, unknown> | null = null
  const docsPage = (): Promise<string> => (docs ??= app.handle(new Request('http://localhost/openapi.json'))
    .then((r: Response) => r.json() as Promise<OpenApiDoc>).then((doc) => renderDocs(doc, { baseUrl: deps.config.publicUrl })))
  let jsonRoutes: Set<string> | null = null
  let bodyRoutes: Set<string> | null = null
  const caps = bodyCaps(deps.config)
  // Runs first among a route's parsers and reads nothing (src/http/bodies.ts): a route that takes no body
  // never reads one (null stops the parsers); the others get their cap, on the declared length now and on
  // the stream while it is read. The key is checked next, by the auth macro's own parser, before any read.
  const capParser = readsNothing((c: { request: Request; route: string; set: object }) => {
    bodyRoutes ??= routesTakingBody(app.routes)
    const method = c.request.method
    const takes = bodyRoutes.has(`${method} ${c.route}`)
    const cap = bodyCap(deps.config, caps, method, c.route, takes)
    const declared = c.request.headers.get('content-length')
    if (declared !== null && Number(declared) > cap) throw overCap(deps.config, cap, method, c.route, declared)
    if (!takes) return null
    // A declared length bounds what the server reads; a body without one (chunked) is cut while read.
    // A route whose body is optional swallows the parser's error: the 413 is kept on the request's `set`
    // and thrown by onTransform.
    if (declared === null) {
      c.request = capBody(c.request, cap, () => {
        const err = overCap(deps.config, cap, method, c.route)
        ;(c.set as Tracked)[OVER_CAP] = err
        return err
      })
    }
  })
  /** The error envelope of a refused or failed request (the app's onError hook). */
  const answer = (code: string | number, thrown: unknown, request: Request, set: Context['set']) => {
    // The key check runs among the parsers (src/http/auth.ts): its failures are not about the body.
    const before = code === 'PARSE' && (thrown as Error).cause instanceof NotABodyError ? ((thrown as Error).cause as NotABodyError).inner : undefined
    const error = before ?? thrown
    const id = requestId(set)
    set.headers['x-request-id'] = id
    const cors = corsAnswerHeaders(pathOf(request.url), request)
    if (cors) Object.assign(set.headers, cors)
    let err: AppError
    const storage = error instanceof AppError ? null : storageError(error)
    // A write that lost to concurrent writers on every run (conflictAnswer): its 409, logged, since it
    // should be rare.
    if (error instanceof LostRaceError) log.warn('write conflicted on every run', { requestId: id, method: request.method, path: pathOf(request.url), ...errorFields(error.cause ?? error) })
    if (error instanceof AppError) err = error
    else if (code === 'VALIDATION') err = fromValidation(error as ValidationError)
    // A route's own parser refusing the body (the CSV import's size cap) reaches here wrapped in a ParseError.
    else if (code === 'PARSE' && (error as Error).cause instanceof AppError) err = (error as Error).cause as AppError
    else if (code === 'PARSE' && before === undefined) err = new AppError('BAD_REQUEST', 'Malformed request body: it could not be parsed as the declared content type')
    else if (code === 'NOT_FOUND') err = new AppError('NOT_FOUND', `No route for ${request.method} ${pathOf(request.url)}`)
    else if (code === 'INVALID_COOKIE_SIGNATURE') err = new AppError('UNAUTHORIZED', 'Invalid session cookie')
    else if (storage) {
      log.warn('storage failure', { requestId: id, method: request.method, path: pathOf(request.url), code: storage.code, ...errorFields(error) })
      err = storage
    } else {
      log.error('unhandled error', { requestId: id, method: request.method, path: pathOf(request.url), ...errorFields(error) })
      err = new AppError('INTERNAL_SERVER_ERROR', 'An unexpected error occurred. Quote the request id when reporting it.')
    }
    if (err.opts.headers) Object.assign(set.headers, err.opts.headers)
    set.status = err.status
    return envelope(err, id)
  }
  const app = new Elysia({ serve: dashboardServe })
    .onRequest(({ request, set }) => {
      const id = crypto.randomUUID()
      ;(set as Tracked)[REQ] = { id, start: performance.now() }
      set.headers['x-request-id'] = id
      const cors = corsAnswerHeaders(pathOf(request.url), request)
      if (cors) Object.assign(set.headers, cors)
      const len = request.headers.get('content-length')
      if (len && Number(len) > deps.config.maxBodyBytes) {
        throw tooLarge(`Request body of ${len} bytes exceeds the limit of ${deps.config.maxBodyBytes} bytes`)
      }
    })
    .onParse({ as: 'global' }, capParser)
    .onError({ as: 'global' }, ({ code, error: thrown, request, set }) => {
      // A refused /v1/track whose key was answered from memory never reached the write that confirms it:
      // the key is looked up first, and a rotated or disabled one answers its 401 or 403 (auth.ts).
      if (holdsUnconfirmedKey(set)) return staleKeyRefusal(deps, set).then((refusal) => answer(code, refusal ?? thrown, request, set), (err) => answer('UNKNOWN', err, request, set))
      return answer(code, thrown, request, set)
    })
    .onTransform({ as: 'global' }, ({ body, request, route, set }) => {
      const over = (set as Tracked)[OVER_CAP]
      if (over) throw over
      if (typeof body === 'object' && body !== null) {
        const deep = tooDeepBranch(body)
        if (deep !== null) throw tooDeepBody(body, deep)
      }
      // Before any query: text PostgreSQL cannot store (NUL, lone surrogates), refused on both stores.
      const unstorable = unstorableRequest(request.url, body)
      if (unstorable) throw unstorable
      // JSON bodies are objects. Elysia would turn a JSON array, a scalar or a text/plain string into {}
      // for a schema whose fields are all optional, so the request would "succeed" and change nothing.
      // Only routes that declare a JSON body are held to it: a body sent to a route that takes none (an
      // empty text/plain POST) is ignored, as before.
      if (body === undefined || (typeof body === 'object' && body !== null && !Array.isArray(body))) return
      jsonRoutes ??= routesWithJsonBody(app.routes)
      if (!jsonRoutes.has(`${request.method} ${route}`)) return
      const type = request.headers.get('content-type') ?? 'none'
      throw badRequest(typeof body === 'string' && !type.includes('json')
        ? `The body must be a JSON object sent with Content-Type: application/json (it came as ${type})`
        : 'The body must be a JSON object')
    })
    .onAfterResponse({ as: 'global' }, ({ request, route, set }) => {
      const i = (set as Tracked)[REQ]
      if (!i) return
      const status = typeof set.status === 'number' ? set.status : 200
      const ms = performance.now() - i.start
      log.info('request', {
        requestId: i.id,
        method: request.method,
        path: pathOf(request.url),
        status,
        ms: Math.round(ms * 100) / 100,
      })
      // The route's pattern (bounded), never the raw path; a request that matched no route is "unmatched".
      httpMetrics.observe(request.method, route || 'unmatched', status, ms / 1000)
    })
    // The OpenAPI generator describes a request body only for routes without function parsers; every route
    // now has the body-cap and key parsers (which read nothing), so their body's content is restored.
    .get('/openapi.json', (): Record<string, unknown> => (spec ??= openApiDocument(app, deps.config, DOCUMENTATION, (doc: { paths: unknown }) => restoreRequestBodies(doc as OpenApiDoc, app.routes))), { detail: { hide: true } })
    .get('/docs', async (): Promise<Response> => new Response(await docsPage(), { headers: { 'content-type': 'text/html; charset=utf-8' } }), { detail: { hide: true } })
    .use(systemRoutes(deps))
    .use(metricsRoutes(deps))
    .use(configRoutes(deps))
    .use(authRoutes(deps))
    .use(usersRoutes(deps))
    .use(projectsRoutes(deps))
    .use(membersRoutes(deps))
    .use(invitationsRoutes(deps))
    .use(contactsRoutes(deps))
    .use(trackRoutes(deps))
    .use(corsRoutes())
    .use(eventsRoutes(deps))
    .use(verifyRoutes(deps))
    .use(subscriptionRoutes(deps))
    .use(domainsRoutes(deps))
    .use(templatesRoutes(deps))
    .use(segmentsRoutes(deps))
    .use(campaignsRoutes(deps))
    .use(workflowsRoutes(deps))
    .use(trackingRoutes(deps))
    .use(webhooksRoutes(deps))
    .use(hooksRoutes(deps))
    .use(emailsRoutes(deps))
    .use(suppressionsRoutes(deps))
    // The activity feed of emails and events: GET /activity and its stats, types and recent count.
    .use(activityRoutes(deps))
    .use(analyticsRoutes(deps))
    .use(billingRoutes(deps))
    .use(uploadsRoutes(deps))
    .use(securityRoutes(deps))
    // The web dashboard at /app/ (its page and chunks are Bun.serve routes) and GET / for browsers.
    .use(dashboardRoutes(deps))
  if (!checkResponses()) trustResponses(app.routes)
  return app
}

/**
 * The 422 for a body nesting deeper than MAX_BODY_DEPTH under the top-level key `field`: for `data`, the
 * limit of contact data (10 levels) that it breaks as well; otherwise the body's limit.
 */
function tooDeepBody(body: object, field: string): AppError {
  if (field === 'data') checkDataLimits((body as { data?: unknown }).data)
  const name = field || 'body'
  const message = `${name}: objects and arrays may nest at most ${MAX_BODY_DEPTH} levels deep in a request body`
  return validation([{ field: name, message, code: 'too_deep' }], message)
}

/**
 * "METHOD /path" of the routes that declare a body schema and parse it as JSON: the ones held to a JSON
 * object. Routes that parse their own body (raw text, forms, CSV) or take none are not.
 */
function routesWithJsonBody(routes: Array<{ method: string; path: string; hooks: Record<string, unknown> }>): Set<string> {
  const out = new Set<string>()
  for (const r of routes) if (r.hooks?.body && !hasOwnParser(r.hooks.parse)) out.add(`${r.method} ${r.path}`)
  return out
}

/**
 * Fills the request body of the operations the generator left empty (see buildApp): the route's schema,
 * as JSON, or as multipart for the routes that take a form.
 */
function restoreRequestBodies(doc: OpenApiDoc, routes: Array<{ method: string; path: string; hooks: Record<string, unknown> }>): void {
  const paths = (doc as { paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } }>> }).paths
  if (!paths) return
  for (const r of routes) {
    if (!r.hooks?.body) continue
    const op = paths[r.path.replace(/:([^/]+)/g, '{$1}')]?.[r.method.toLowerCase()]
    const rb = op?.requestBody
    if (!rb || (rb.content && Object.keys(rb.content).length > 0)) continue
    rb.content = { [r.hooks.type === 'multipart/form-data' ? 'multipart/form-data' : 'application/json']: { schema: r.hooks.body } }
  }
}

/** "METHOD /path" of the routes that read a body: a body schema, or a parser of their own. */
function routesTakingBody(routes: Array<{ method: string; path: string; hooks: Record<string, unknown> }>): Set<string> {
  const out = new Set<string>()
  for (const r of routes) if (r.hooks?.body || hasOwnParser(r.hooks?.parse)) out.add(`${r.method} ${r.path}`)
  return out
}

/** Response schemas are checked against every answer under `bun test`, or when MAILCTL_CHECK_RESPONSES=1. */
function checkResponses(): boolean {
  return process.env.NODE_ENV === 'test' || process.env.MAILCTL_CHECK_RESPONSES === '1'
}

/**
 * Response schemas document the API (OpenAPI) and, under test, are checked against every answer, so a
 * handler that drifts from its schema fails the suite. In production the handlers' own output is trusted:
 * a full check of a small JSON answer cost about a sixth of a cheap request. Elysia still copies only the
 * declared fields (normalize), so nothing undeclared leaks out. A schema object also used to validate a
 * request is left alone: `noValidate` would switch that check off too.
 */
function trustResponses(routes: Array<{ hooks: Record<string, unknown> }>) {
  const inputs = new Set<unknown>()
  for (const r of routes) for (const k of ['body', 'query', 'params', 'headers', 'cookie']) if (r.hooks?.[k]) inputs.add(r.hooks[k])
  for (const r of routes) {
    const response = r.hooks?.response as Record<string | symbol, unknown> | undefined
    if (!response || typeof response !== 'object') continue
    const schemas = Kind in response ? [response] : Object.values(response)
    for (const s of schemas) if (s && typeof s === 'object' && Kind in s && !inputs.has(s)) (s as { noValidate?: boolean }).noValidate = true
  }
}

export type App = ReturnType<typeof buildApp>
