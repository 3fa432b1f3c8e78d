import { Value } from '@sinclair/typebox/value'
import pkg from '../../package.json'
import { ctxFor, type Deps } from '../deps'
import { AppError, validation } from '../errors'
import { LostRaceError } from '../db/group-commit'
import { errorFields } from '../log'
import { projectForKey } from '../modules/projects/service'
import { unstorableInput } from '../storable'
import { TOOLS, type Tool } from './tools'

/**
 * `mailctl mcp`: a Model Context Protocol server on stdio (JSON-RPC 2.0, one message a line) whose tools
 * are the project API's verbs (tools.ts), acting for the project of the secret key in MAILCTL_MCP_KEY.
 * Every call looks the key up again and is refused as HTTP would refuse it: an invalid or public key, a
 * disabled project, the project's rate limit; a tool's input is checked against the route's model, and a
 * refusal is the tool's error result carrying the API's error envelope (src/http/errors.ts: code, message, field errors).
 */

/** Protocol revisions this server speaks; an unknown one asked by the client is answered with the newest. */
const PROTOCOLS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']

interface Message { jsonrpc: '2.0'; id?: string | number | null; method?: string; params?: Record<string, unknown> }

/** The context of one call for the project of `key`, or the refusal HTTP would answer. */
export async function authorize(deps: Deps, key: string): Promise<ReturnType<typeof ctxFor>> {
  const found = await projectForKey(deps.store, key)
  if (found?.kind !== 'secret') throw new AppError('INVALID_API_KEY', 'MAILCTL_MCP_KEY is not a secret key (sk_...) of a project')
  if (found.project.disabled) throw new AppError('PROJECT_DISABLED', 'This project is disabled')
  const hit = await deps.limiter.hit(`project:${found.project.id}`, deps.config.rateLimitPerMinute, 60_000)
  if (!hit.allowed) throw new AppError('RATE_LIMIT_EXCEEDED', `Rate limit exceeded: ${hit.limit} requests per minute`)
  return ctxFor(deps, found.project.id, { kind: 'key', keyKind: 'secret' })
}

function envelope(err: unknown): Record<string, unknown> {
  if (err instanceof AppError) {
    return { success: false, error: { code: err.code, message: err.message, statusCode: err.status, ...(err.opts.errors ? { errors: err.opts.errors } : {}), ...(err.opts.suggestion ? { suggestion: err.opts.suggestion } : {}) } }
  }
  return { success: false, error: { code: 'INTERNAL_SERVER_ERROR', message: 'Internal server error', statusCode: 500 } }
}

/** Checks a tool's arguments against its model (defaults applied first, as the route does). */
function checkArgs(tool: Tool, raw: unknown): Record<string, unknown> {
  const args = Value.Default(tool.input, structuredClone(raw ?? {})) as Record<string, unknown>
  if (Value.Check(tool.input, args)) {
    // As over HTTP (src/http/text.ts): text no store can hold is refused before any query.
    const unstorable = unstorableInput(args)
    if (unstorable) throw unstorable
    return args
  }
  const errors = [...Value.Errors(tool.input, args)].slice(0, 20).map((e) => ({ field: e.path.replace(/^\//, '').replace(/\//g, '.') || '(input)', message: e.message, code: 'invalid' }))
  throw validation(errors)
}

export async function callTool(deps: Deps, key: string, name: string, raw: unknown): Promise<{ content: Array<{ type: 'text'; text: string }>; isError?: boolean; structuredContent?: Record<string, unknown> }> {
  const tool = TOOLS.find((x) => x.name === name)
  if (!tool) throw new RpcError(-32602, `Unknown tool: ${name}`)
  try {
    const ctx = await authorize(deps, key)
    const result = await tool.run(ctx, checkArgs(tool, raw))
    const data = (result ?? {}) as Record<string, unknown>
    return { content: [{ type: 'text', text: JSON.stringify(data) }] }
  } catch (err) {
    // A write that lost to concurrent writers on every run (conflictAnswer): logged as the HTTP API does.
    if (err instanceof LostRaceError) deps.log.warn('write conflicted on every run', { tool: name, ...errorFields(err.cause ?? err) })
    else if (!(err instanceof AppError)) deps.log.error('mcp tool failed', { tool: name, error: err instanceof Error ? err.message : String(err) })
    return { content: [{ type: 'text', text: JSON.stringify(envelope(err)) }], isError: true }
  }
}

class RpcError extends Error {
  constructor(readonly code: number, message: string) { super(message) }
}

async function handle(deps: Deps, key: string, msg: Message): Promise<unknown> {
  switch (msg.method) {
    case 'initialize': {
      const asked = String(msg.params?.protocolVersion ?? '')
      return {
        protocolVersion: PROTOCOLS.includes(asked) ? asked : PROTOCOLS[0],
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'mailctl', version: pkg.version },
        instructions: 'Tools act on one mailctl project (the secret key in MAILCTL_MCP_KEY) with the validation and refusals of its HTTP API.',
      }
    }
    case 'ping': return {}
    case 'tools/list': return { tools: TOOLS.map((x) => ({ name: x.name, description: x.description, inputSchema: JSON.parse(JSON.stringify(x.input)) })) }
    case 'tools/call': return callTool(deps, key, String(msg.params?.name ?? ''), msg.params?.arguments)
    default: throw new RpcError(-32601, `Method not found: ${msg.method}`)
  }
}

/** Serves MCP on `input`/`output` until the input ends. */
export async function serveMcp(deps: Deps, key: string, input: ReadableStream<Uint8Array>, write: (line: string) => void): Promise<void> {
  const send = (m: Record<string, unknown>) => write(`${JSON.stringify({ jsonrpc: '2.0', ...m })}\n`)
  let queue: Promise<void> = Promise.resolve()
  const decoder = new TextDecoder()
  let buf = ''
  const onLine = (line: string) => {
    if (!line.trim()) return
    let msg: Message
    try { msg = JSON.parse(line) as Message } catch { send({ id: null, error: { code: -32700, message: 'Parse error' } }); return }
    // A notification (no id) gets no answer (notifications/initialized, notifications/cancelled).
    if (msg.id === undefined) return
    if (typeof msg.method !== 'string') { send({ id: msg.id, error: { code: -32600, message: 'Invalid request' } }); return }
    // One request at a time, in the order received: a call sees the writes of the calls before it.
    queue = queue.then(() => handle(deps, key, msg))
      .then((result) => send({ id: msg.id, result }))
      .catch((err) => send({ id: msg.id, error: err instanceof RpcError ? { code: err.code, message: err.message } : { code: -32603, message: 'Internal error' } }))
  }
  const reader = input.getReader()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buf += decoder.decode(value, { stream: true })
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      onLine(buf.slice(0, nl))
      buf = buf.slice(nl + 1)
    }
  }
  onLine(buf)
  await queue
}
