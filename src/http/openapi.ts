/**
 * GET /openapi.json: the OpenAPI document of the routes (@elysiajs/openapi's toOpenAPISchema over the route
 * table), made acceptable to linters (Spectral's `spectral:oas`, checked by test/http/openapi-lint.test.ts)
 * without changing what any route accepts or answers:
 *
 * - Elysia's `t.Integer`, `t.Numeric` and `t.BooleanString` accept a string too, so their schemas are
 *   `anyOf [{type: string, format: integer, default: 0}, {type: integer}]`: every count read as "string or
 *   integer", with a default that is not a string. The document says the number (or boolean) only (a query
 *   string is text on the wire anyway); validation still runs on the real schemas, which are not touched.
 * - The document names its tags, its server (MAILCTL_PUBLIC_URL) and a contact; an operation without a
 *   description gets its summary.
 */
import { toOpenAPISchema } from '@elysiajs/openapi'
import type { AnyElysia } from 'elysia'
import type { Config } from '../config'

type Json = Record<string, unknown>

const TAGS: Record<string, string> = {
  send: 'Transactional sending (POST /v1/send) and the emails it creates',
  events: 'Tracked events (POST /v1/track) and their reads',
  contacts: 'Contacts: records, custom data, import, export, bulk changes',
  templates: 'Email templates',
  segments: 'Segments: saved audiences, static or by filters',
  campaigns: 'Campaigns: composing, scheduling, sending, statistics',
  workflows: 'Workflows: event-triggered journeys and their executions',
  domains: 'Sending domains, their DKIM keys and DNS records',
  verify: 'Address verification',
  suppressions: 'The suppression list',
  webhooks: 'Customer webhook endpoints and their deliveries; provider webhooks',
  tracking: 'Open and click tracking links in sent mail',
  'subscription pages': 'Unsubscribe and preference pages reached from mail',
  activity: 'The activity feed of emails and events',
  analytics: 'Counters and time series',
  uploads: 'Uploaded images',
  projects: 'Projects: keys, settings, setup state',
  members: 'Project members and their roles',
  users: 'Dashboard users',
  auth: 'Dashboard sign-up, sign-in and sessions',
  billing: 'Plans, caps and the payment provider',
  security: 'Project security: thresholds and suspensions',
  config: 'What this server offers the dashboard',
  system: 'Liveness, readiness and metrics',
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** The string member of Elysia's number and boolean schemas (`t.Numeric`, `t.BooleanString`, its `t.Integer`). */
function numericString(m: unknown): boolean {
  return isObject(m) && m.type === 'string' && (m.format === 'integer' || m.format === 'numeric' || m.format === 'boolean') && 'default' in m
}

/** A copy of a schema (or any part of the document) with the numeric-string alternatives removed. */
export function withoutNumericStrings(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutNumericStrings)
  if (!isObject(node)) return node
  const out: Json = {}
  for (const [k, v] of Object.entries(node)) out[k] = withoutNumericStrings(v)
  const any = out.anyOf
  if (Array.isArray(any) && any.some(numericString) && any.some((m) => isObject(m) && (m.type === 'integer' || m.type === 'number' || m.type === 'boolean'))) {
    const kept = any.filter((m) => !numericString(m))
    if (kept.length === 1 && isObject(kept[0])) {
      const { anyOf: _, ...rest } = out
      return { ...kept[0], ...rest }
    }
    out.anyOf = kept
  }
  return out
}

/** The document of `app`'s routes, as GET /openapi.json serves it. */
export function openApiDocument(app: AnyElysia, config: Pick<Config, 'publicUrl'>, documentation: { info: Json; components: Json }, fill: (doc: { paths: unknown }) => void): Json {
  const { paths, components } = toOpenAPISchema(app)
  fill({ paths })
  const cleaned = withoutNumericStrings(paths) as Record<string, Record<string, Json>>
  const used = new Set<string>()
  for (const ops of Object.values(cleaned)) {
    for (const op of Object.values(ops)) {
      if (!isObject(op)) continue
      for (const tag of (op.tags as string[] | undefined) ?? []) used.add(tag)
      if (!op.description && typeof op.summary === 'string') op.description = op.summary
    }
  }
  const server = config.publicUrl.replace(/\/+$/, '')
  return {
    openapi: '3.1.0',
    info: { ...documentation.info, contact: { name: 'The operator of this mailctl server', url: `${server}/docs` } },
    servers: [{ url: server, description: 'This server (its public URL, MAILCTL_PUBLIC_URL)' }],
    tags: [...used].sort().map((name) => ({ name, description: TAGS[name] ?? `The ${name} routes` })),
    paths: cleaned,
    components: { ...documentation.components, schemas: withoutNumericStrings(components.schemas ?? {}) },
  }
}
