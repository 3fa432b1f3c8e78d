/**
 * GET /docs: a self-contained HTML reference rendered from the OpenAPI document (no scripts, fonts or
 * styles from elsewhere, so it works on a server without internet access). Descriptions are Markdown
 * (raw HTML in them is shown as text); every operation gets a curl example, and /v1/send and /v1/track
 * an example with the official SDK (@plunk/node) too.
 */
import { markdownInlineToHtml, markdownToHtml } from '../mail/render/markdown'

type Json = Record<string, unknown>
interface Schema extends Json {
  type?: string | string[]; format?: string; description?: string; enum?: unknown[]; const?: unknown; default?: unknown
  properties?: Record<string, Schema>; required?: string[]; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[]
  $ref?: string; minLength?: number; maxLength?: number; minimum?: number; maximum?: number; minItems?: number; maxItems?: number
  pattern?: string; additionalProperties?: boolean | Schema; examples?: unknown[]
}
interface Parameter { name: string; in: string; required?: boolean; description?: string; schema?: Schema }
interface Operation {
  tags?: string[]; summary?: string; description?: string; security?: Array<Record<string, string[]>>
  parameters?: Parameter[]; requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> }
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>
  hide?: boolean
}
export interface OpenApiDoc {
  info?: { title?: string; version?: string; description?: string }
  paths?: Record<string, Record<string, Operation>>
  components?: { schemas?: Record<string, Schema>; securitySchemes?: Record<string, { type?: string; scheme?: string; in?: string; name?: string; description?: string }> }
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete']

export function escapeHtml(s: unknown): string {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')
}

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')

function resolve(doc: OpenApiDoc, s: Schema | undefined, seen: Set<string> = new Set()): Schema | undefined {
  if (!s?.$ref) return s
  const name = s.$ref.replace('#/components/schemas/', '')
  if (seen.has(name)) return { type: 'object', description: `(recursive ${name})` }
  seen.add(name)
  return resolve(doc, doc.components?.schemas?.[name], seen)
}

/** A one-line type label: `string (email)`, `"A" | "B"`, `array of object`, `string | null`... */
function typeLabel(doc: OpenApiDoc, raw: Schema | undefined): string {
  const s = resolve(doc, raw)
  if (!s) return 'any'
  if (s.const !== undefined) return JSON.stringify(s.const)
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ')
  const alts = s.anyOf ?? s.oneOf
  if (alts) {
    // Elysia's t.Date: an ISO date-time string on the wire.
    if (alts.some((a) => resolve(doc, a)?.format === 'date-time')) return 'string (date-time)'
    return [...new Set(alts.map((a) => typeLabel(doc, a)))].join(' | ')
  }
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : []
  const label = types.map((t) => {
    if (t === 'array') return `array of ${typeLabel(doc, s.items)}`
    if (t === 'string' && s.format) return `string (${s.format})`
    return t
  }).join(' | ')
  return label || (s.properties ? 'object' : 'any')
}

function constraints(s: Schema): string[] {
  const out: string[] = []
  if (s.minLength !== undefined && s.maxLength !== undefined) out.push(`${s.minLength}-${s.maxLength} chars`)
  else if (s.minLength !== undefined) out.push(`>= ${s.minLength} chars`)
  else if (s.maxLength !== undefined) out.push(`<= ${s.maxLength} chars`)
  if (s.minimum !== undefined) out.push(`>= ${s.minimum}`)
  if (s.maximum !== undefined) out.push(`<= ${s.maximum}`)
  if (s.minItems !== undefined) out.push(`>= ${s.minItems} items`)
  if (s.maxItems !== undefined) out.push(`<= ${s.maxItems} items`)
  if (s.pattern) out.push(`pattern ${s.pattern}`)
  if (s.default !== undefined) out.push(`default ${JSON.stringify(s.default)}`)
  return out
}

/** The object's fields as a nested table (objects inside arrays and unions are expanded too). */
function fields(doc: OpenApiDoc, raw: Schema | undefined, depth = 0): string {
  const s = resolve(doc, raw)
  if (!s || depth > 6) return ''
  const inner = s.type === 'array' ? resolve(doc, s.items) : s
  const objects = (inner?.anyOf ?? inner?.oneOf ?? [inner]).map((x) => resolve(doc, x)).filter((x): x is Schema => Boolean(x?.properties))
  if (!objects.length) return ''
  return objects.map((obj) => {
    const rows = Object.entries(obj.properties ?? {}).map(([name, prop]) => {
      const p = resolve(doc, prop) ?? {}
      const req = obj.required?.includes(name) ? '<span class="req">required</span>' : ''
      const notes = notesOf(p.description, p)
      const nested = fields(doc, p, depth + 1)
      return `<tr><td><code>${escapeHtml(name)}</code> ${req}</td><td>${escapeHtml(typeLabel(doc, p))}</td><td>${notes}${nested ? `<div class="nested">${nested}</div>` : ''}</td></tr>`
    }).join('')
    return `<table><thead><tr><th>field</th><th>type</th><th>notes</th></tr></thead><tbody>${rows}</tbody></table>`
  }).join('<p class="or">or</p>')
}

/** The names of the operation's security schemes, each once, in order. */
function schemeNames(op: Operation): string[] {
  return [...new Set((op.security ?? []).flatMap((s) => Object.keys(s)))]
}

function security(doc: OpenApiDoc, op: Operation): string {
  const names = schemeNames(op)
  if (!names.length) return '<span class="auth none">no authentication</span>'
  return names.map((n) => {
    const scheme = doc.components?.securitySchemes?.[n]
    return `<span class="auth">${inline(scheme?.description ?? n)}</span>`
  }).join(' or ')
}

/** Markdown of a description shown inline (a table cell, a summary). */
const inline = (md: string) => markdownInlineToHtml(md)

/** A field's notes: its description (Markdown) and its constraints (plain). */
function notesOf(description: string | undefined, s: Schema): string {
  return [...(description ? [inline(description)] : []), ...constraints(s).map(escapeHtml)].join('; ')
}

// ---------------------------------------------------------------------------------------------------
// Request examples

/** A plausible value of a schema, for examples: its example, const, default or first enum value, or one by type. */
function sample(doc: OpenApiDoc, raw: Schema | undefined, depth = 0): unknown {
  const s = resolve(doc, raw)
  if (!s || depth > 4) return null
  if (s.examples?.length) return s.examples[0]
  if (s.const !== undefined) return s.const
  if (s.default !== undefined) return s.default
  if (s.enum?.length) return s.enum[0]
  const alts = s.anyOf ?? s.oneOf
  if (alts?.length) return sample(doc, alts.find((a) => resolve(doc, a)?.type !== 'null') ?? alts[0], depth + 1)
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type
  if (type === 'object' || (!type && s.properties)) return sampleObject(doc, s, depth)
  if (type === 'array') return [sample(doc, s.items, depth + 1)]
  if (type === 'integer' || type === 'number') return s.minimum ?? 1
  if (type === 'boolean') return true
  if (type === 'null') return null
  switch (s.format) {
    case 'email': return 'user@example.com'
    case 'uuid': return '01900000-0000-7000-8000-000000000000'
    case 'date-time': return '2026-01-01T00:00:00.000Z'
    case 'uri': return 'https://example.com/'
  }
  return 'string'
}

/** The required fields of an object (all of them, up to three, when none is required). */
function sampleObject(doc: OpenApiDoc, s: Schema, depth: number): Json {
  const props = Object.entries(s.properties ?? {})
  const chosen = s.required?.length ? props.filter(([k]) => s.required?.includes(k)) : props.slice(0, 3)
  const out: Json = {}
  for (const [k, v] of chosen) out[k] = sample(doc, v, depth + 1)
  if (!props.length && s.additionalProperties) out.key = 'value'
  return out
}

/** Hand-written bodies where the schema alone gives a poor example. */
const BODY_EXAMPLES: Record<string, unknown> = {
  'post /v1/send': { to: 'user@example.com', from: { name: 'Acme', email: 'hello@yourdomain.com' }, subject: 'Welcome, {{name}}', body: '# Hi {{name}}\n\nThanks for signing up.', type: 'markdown', data: { name: 'Ann' } },
  'post /v1/track': { event: 'signed-up', email: 'user@example.com', data: { plan: 'pro' } },
  'post /v1/verify': { email: 'user@example.com' },
}

/** The official SDK's methods (@plunk/node): emails.send and events.track. */
const SDK_EXAMPLES: Record<string, { key: string; call: string }> = {
  'post /v1/send': {
    key: 'MAILCTL_SECRET_KEY',
    call: `await plunk.emails.send({
  to: 'user@example.com',
  from: 'hello@yourdomain.com',
  subject: 'Welcome',
  body: '# Hi\\n\\nThanks for signing up.',
  type: 'markdown',
})`,
  },
  'post /v1/track': {
    key: 'MAILCTL_PUBLIC_KEY',
    call: `await plunk.events.track({
  event: 'signed-up',
  email: 'user@example.com',
  data: { plan: 'pro' },
})`,
  },
}

/** Single-quoted for a POSIX shell. */
const shellQuote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`

function curlExample(doc: OpenApiDoc, method: string, path: string, op: Operation, baseUrl: string): string {
  const query = (op.parameters ?? []).filter((p) => p.in === 'query' && p.required)
    .map((p) => `${encodeURIComponent(p.name)}=${encodeURIComponent(String(sample(doc, p.schema)))}`)
  const url = `${baseUrl}${path}${query.length ? `?${query.join('&')}` : ''}`
  const lines = [`curl${method === 'get' ? '' : ` -X ${method.toUpperCase()}`} "${url}"`]
  const names = schemeNames(op)
  if (names[0] === 'secretKey') lines.push('-H "Authorization: Bearer $MAILCTL_SECRET_KEY"')
  else if (names[0] === 'publicKey') lines.push('-H "Authorization: Bearer $MAILCTL_PUBLIC_KEY"')
  else if (names[0] === 'session') lines.push('-b "mailctl_session=$MAILCTL_SESSION"')
  for (const p of op.parameters ?? []) {
    if (p.in === 'header' && p.required) lines.push(`-H "${p.name}: ${String(sample(doc, p.schema))}"`)
  }
  const content = op.requestBody?.content ?? {}
  const key = `${method} ${path}`
  const json = content['application/json']?.schema
  if (json || BODY_EXAMPLES[key]) {
    lines.push('-H "Content-Type: application/json"')
    lines.push(`-d ${shellQuote(JSON.stringify(BODY_EXAMPLES[key] ?? sample(doc, json)))}`)
  } else if (op.requestBody) {
    // Multipart uploads (the CSV import): one -F per field; a file field reads a local file.
    const schema = resolve(doc, Object.values(content)[0]?.schema)
    const fieldNames = Object.keys(schema?.properties ?? {})
    for (const f of fieldNames.length ? fieldNames : ['file']) lines.push(`-F "${f}=@contacts.csv"`)
  }
  return lines.join(' \\\n  ')
}

function sdkExample(key: string, baseUrl: string): string | null {
  const ex = SDK_EXAMPLES[key]
  if (!ex) return null
  return `import Plunk from '@plunk/node'

// baseUrl ends with /v1/ (the trailing slash matters)
const plunk = new Plunk(process.env.${ex.key}, { baseUrl: '${baseUrl}/v1/' })
${ex.call}`
}

function examples(doc: OpenApiDoc, method: string, path: string, op: Operation, baseUrl: string): string {
  const curl = `<pre class="example"><code>${escapeHtml(curlExample(doc, method, path, op, baseUrl))}</code></pre>`
  const sdk = sdkExample(`${method} ${path}`, baseUrl)
  return `<h4>Example</h4>${curl}${sdk ? `<p class="or">With the official SDK (<code>@plunk/node</code>):</p><pre class="example"><code>${escapeHtml(sdk)}</code></pre>` : ''}`
}

function operation(doc: OpenApiDoc, method: string, path: string, op: Operation, baseUrl: string): string {
  const id = slug(`${method} ${path}`)
  const params = op.parameters?.length
    ? `<h4>Parameters</h4><table><thead><tr><th>name</th><th>in</th><th>type</th><th>notes</th></tr></thead><tbody>${op.parameters.map((p) => {
      const sch = resolve(doc, p.schema) ?? {}
      const notes = notesOf(p.description ?? sch.description, sch)
      return `<tr><td><code>${escapeHtml(p.name)}</code> ${p.required ? '<span class="req">required</span>' : ''}</td><td>${escapeHtml(p.in)}</td><td>${escapeHtml(typeLabel(doc, sch))}</td><td>${notes}</td></tr>`
    }).join('')}</tbody></table>`
    : ''
  const bodySchema = op.requestBody?.content?.['application/json']?.schema ?? Object.values(op.requestBody?.content ?? {})[0]?.schema
  const body = bodySchema ? `<h4>Request body <span class="ct">${escapeHtml(Object.keys(op.requestBody?.content ?? {})[0] ?? '')}</span></h4>${fields(doc, bodySchema) || `<p>${escapeHtml(typeLabel(doc, bodySchema))}</p>`}` : ''
  const responses = Object.entries(op.responses ?? {}).map(([status, r]) => {
    const sch = r.content?.['application/json']?.schema ?? Object.values(r.content ?? {})[0]?.schema
    const table = sch ? fields(doc, sch) : ''
    return `<div class="resp"><span class="status s${escapeHtml(status[0])}">${escapeHtml(status)}</span> ${escapeHtml(sch ? typeLabel(doc, sch) : '')} ${inline(r.description ?? '')}${table}</div>`
  }).join('')
  return `<section class="op" id="${id}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code> <a class="anchor" href="#${id}">#</a></h3>
<p class="summary">${inline(op.summary ?? '')}</p>
${op.description ? markdownToHtml(op.description) : ''}
<p>${security(doc, op)}</p>
${params}${body}${examples(doc, method, path, op, baseUrl)}${responses ? `<h4>Responses</h4>${responses}` : ''}
</section>`
}

const STYLE = `body{font:15px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
nav{position:fixed;top:0;bottom:0;left:0;width:270px;overflow:auto;padding:16px;background:#fff;border-right:1px solid #e3e6ea;font-size:13px}
nav a{display:block;color:#1d2330;text-decoration:none;padding:1px 0}nav a:hover{text-decoration:underline}nav h4{margin:12px 0 4px;text-transform:uppercase;font-size:11px;color:#6b7480}
main{margin-left:302px;padding:16px 32px;max-width:1000px}h1{margin-top:0}h2{border-bottom:1px solid #e3e6ea;padding-bottom:4px;margin-top:40px;text-transform:capitalize}
.op{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:4px 16px 12px;margin:16px 0}.op h3{font-size:16px}
.m{display:inline-block;min-width:58px;text-align:center;border-radius:4px;color:#fff;font-size:12px;padding:2px 6px;margin-right:6px}
.get{background:#2b7bb9}.post{background:#2f9e44}.put{background:#b7791f}.patch{background:#9c5ec4}.delete{background:#c92a2a}
table{border-collapse:collapse;width:100%;margin:6px 0;font-size:13px}th,td{border:1px solid #e3e6ea;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f3f5f7}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}.req{color:#c92a2a;font-size:11px}.nested{margin-top:4px}
.auth{display:inline-block;background:#fff4e6;border:1px solid #ffd8a8;border-radius:4px;padding:0 6px;font-size:12px}.auth.none{background:#ebfbee;border-color:#b2f2bb}
.status{display:inline-block;border-radius:4px;padding:0 6px;font-weight:600}.s2{background:#ebfbee}.s4{background:#fff5f5}.s5{background:#fff5f5}
.resp{margin:6px 0}.anchor{color:#adb5bd;text-decoration:none;font-size:13px}.ct{font-weight:normal;color:#6b7480;font-size:12px}.or{margin:2px 0;color:#6b7480;font-size:12px}
pre{background:#f3f5f7;padding:8px 12px;border-radius:4px;overflow:auto;font-size:13px}.op ul{padding-left:20px}
@media (max-width:800px){nav{display:none}main{margin-left:0}}`

const ERROR_EXAMPLE = `{
  "success": false,
  "message": "email: Invalid email",
  "error": {
    "code": "VALIDATION_ERROR",
    "message": "email: Invalid email",
    "statusCode": 422,
    "requestId": "8f0c...",
    "errors": [{ "field": "email", "message": "email: Invalid email", "code": "invalid_string", "received": "nope" }]
  },
  "timestamp": "2026-01-01T00:00:00.000Z"
}`

export interface DocsOptions {
  /** The server's public URL (MAILCTL_PUBLIC_URL), used in the examples. */
  baseUrl?: string
}

/** Renders the whole reference. Operations marked hidden (the spec and docs routes) are left out. */
export function renderDocs(doc: OpenApiDoc, opts: DocsOptions = {}): string {
  const baseUrl = (opts.baseUrl ?? 'http://localhost:3000').replace(/\/+$/, '')
  const byTag = new Map<string, Array<{ method: string; path: string; op: Operation }>>()
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method]
      if (!op || op.hide) continue
      const tag = op.tags?.[0] ?? 'other'
      const list = byTag.get(tag)
      if (list) list.push({ method, path, op })
      else byTag.set(tag, [{ method, path, op }])
    }
  }
  const tags = [...byTag.entries()]
  const navList = tags.map(([tag, ops]) => `<h4>${escapeHtml(tag)}</h4>${ops.map(({ method, path }) =>
    `<a href="#${slug(`${method} ${path}`)}"><b>${method.toUpperCase()}</b> ${escapeHtml(path)}</a>`).join('')}`).join('')
  const schemes = Object.entries(doc.components?.securitySchemes ?? {}).map(([name, s]) =>
    `<li><code>${escapeHtml(name)}</code>: ${inline(s.description ?? '')} (${escapeHtml(s.type === 'http' ? `header Authorization: Bearer ...` : `${s.in} ${s.name}`)})</li>`).join('')
  const sections = tags.map(([tag, ops]) => `<h2 id="tag-${slug(tag)}">${escapeHtml(tag)}</h2>${ops.map(({ method, path, op }) => operation(doc, method, path, op, baseUrl)).join('')}`).join('')
  const title = doc.info?.title ?? 'API'
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)} reference</title><style>${STYLE}</style></head>
<body><nav><b>${escapeHtml(title)}</b> <small>${escapeHtml(doc.info?.version ?? '')}</small><p><a href="/openapi.json">openapi.json</a></p>${navList}</nav>
<main><h1>${escapeHtml(title)} <small>${escapeHtml(doc.info?.version ?? '')}</small></h1>
${markdownToHtml(doc.info?.description ?? '')}
<p>The machine-readable OpenAPI 3.1 document is at <a href="/openapi.json"><code>/openapi.json</code></a>.</p>
<h2 id="authentication">Authentication</h2><ul>${schemes}</ul>
<h2 id="errors">Errors</h2><p>Every error answers with this envelope; the top-level <code>message</code> repeats <code>error.message</code> for clients such as the official SDK. A few rejections kept flat for compatibility answer <code>{"error": "..."}</code> only. Every response carries <code>X-Request-Id</code>, the same id as <code>error.requestId</code>. Requests authenticated by an API key carry <code>RateLimit-Limit</code>, <code>RateLimit-Remaining</code>, <code>RateLimit-Reset</code>, and <code>Retry-After</code> on 429.</p>
<pre>${escapeHtml(ERROR_EXAMPLE)}</pre>
${sections}
</main></body></html>`
}
