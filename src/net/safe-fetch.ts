/**
 * Outbound HTTP(S) on a customer's behalf, guarded against server-side request forgery. Workflow WEBHOOK
 * steps and customer webhooks call it; nothing else should reach a customer-given URL.
 *
 *   const res = await safeFetch(url, { method: 'POST', headers, body }, safeFetchOptions(deps.config))
 *   res.status, res.headers, res.body (text, at most maxBodyBytes), res.truncated, res.address, res.url
 *
 * It throws `SafeFetchError` (with a `code`) instead of answering when the request must not or could not be
 * made: a URL that is not http(s), a host that resolves to a refused address, a DNS failure, a connection
 * failure, the timeout, or a redirect to another host. Any HTTP status (including 3xx that are not
 * followed) is an answer.
 *
 * The rules:
 * - http: and https: only.
 * - The host is resolved once; every address it resolves to must be public (src/net/address-guard.ts:
 *   no loopback, private, link-local, CGNAT, unique-local, metadata, multicast or reserved ranges, in any
 *   spelling). The connection is then made to that checked address (the Host header and the TLS server
 *   name carry the name), so a DNS answer that changes between the check and the connection (rebinding)
 *   cannot redirect it. Hosts the operator allowed (MAILCTL_WEBHOOK_ALLOW_HOSTS) skip the address check.
 * - An allow-list entry with a port (`host:port`) allows that port only.
 * - Redirects are followed (at most 5) only to the same host name and port (so only to a host:port that
 *   was checked and allowed), each one checked again. A redirect to another host, or to another port of
 *   the same host, throws `redirect`, even when the allow-list names it.
 * - Framing: a body goes with exactly one Content-Length; framing and hop-by-hop headers a caller passes
 *   (Transfer-Encoding, Content-Length, Connection, Keep-Alive, TE, Trailer, Upgrade, Proxy-*) are dropped.
 * - Connections: kept alive only within one `pool` (a project id): each pool has its own agents, so no
 *   socket carries two tenants' requests. Without a pool every request has its own connection.
 * - One timeout (default 10 s) covers resolution, connection, the answer and its body.
 * - The response body is read up to `maxBodyBytes` (default 256 KiB); the rest is dropped (`truncated`).
 */
import http from 'node:http'
import https from 'node:https'
import { lookup as systemLookup } from 'node:dns/promises'
import { resolverFor } from '../dns'
import { chooseAddress, formatIp, parseAllowList, parseIp } from './address-guard'
import { storableCopy } from '../storable'

export interface SafeFetchInit {
  method?: string
  headers?: Record<string, string>
  body?: string | Uint8Array
}

export interface SafeFetchOptions {
  /** Hosts the operator allows even on refused addresses (MAILCTL_WEBHOOK_ALLOW_HOSTS); see parseAllowList. */
  allowHosts?: readonly string[]
  /** DNS servers (`host[:port]`, MAILCTL_DNS_SERVERS); empty or absent: the system's resolver (with /etc/hosts). */
  dnsServers?: readonly string[]
  /** Whole request, in ms. Default 10,000. */
  timeoutMs?: number
  /** Largest response body kept, in bytes. Default 256 KiB. */
  maxBodyBytes?: number
  /** Same-host redirects followed. Default 5. */
  maxRedirects?: number
  /** Extra trusted CA certificates (PEM) for https; tests use a self-signed one. */
  ca?: string | string[]
  /** Cancels the request (a SafeFetchError `aborted`). */
  signal?: AbortSignal
  /** Whose connections these are (a project id): keep-alive sockets are reused only within one pool. */
  pool?: string
}

export interface SafeResponse {
  status: number
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>
  /**
   * The body as UTF-8 text, cut at maxBodyBytes, each NUL as U+FFFD: it is recorded (a delivery's log, a
   * workflow step's output), and one answer no store can hold would fail the write of its batch on
   * PostgreSQL (src/storable.ts).
   */
  body: string
  truncated: boolean
  /** The URL that answered (after same-host redirects). */
  url: string
  /** The IP address the answer came from. */
  address: string
}

export type SafeFetchErrorCode = 'invalid_url' | 'blocked' | 'dns' | 'connect' | 'timeout' | 'redirect' | 'aborted'

export class SafeFetchError extends Error {
  constructor(readonly code: SafeFetchErrorCode, message: string) {
    super(message)
    this.name = 'SafeFetchError'
  }
}

export const DEFAULT_TIMEOUT_MS = 10_000
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024
const DEFAULT_MAX_REDIRECTS = 5

/** The options every caller passes from the configuration. */
export function safeFetchOptions(config: { webhookAllowHosts: readonly string[]; dnsServers: readonly string[] }): SafeFetchOptions {
  return { allowHosts: config.webhookAllowHosts, dnsServers: config.dnsServers }
}

interface Agents { http: http.Agent; https: https.Agent }

/** Most pools kept; the least recently used one is closed beyond it. */
export const MAX_POOLS = 256
const pools = new Map<string, Agents>()

/**
 * The keep-alive agents of one pool (a tenant): its sockets are keyed by the checked address, and never
 * lent to another pool (a connection shared by tenants lets one tenant's bytes frame
 * another's request on servers that read framing differently).
 */
function agentsOf(pool: string): Agents {
  let a = pools.get(pool)
  if (a) {
    pools.delete(pool)
    pools.set(pool, a)
    return a
  }
  a = { http: new http.Agent({ keepAlive: true, maxSockets: 16 }), https: new https.Agent({ keepAlive: true, maxSockets: 16 }) }
  pools.set(pool, a)
  if (pools.size > MAX_POOLS) {
    const [oldest, agents] = pools.entries().next().value as [string, Agents]
    pools.delete(oldest)
    agents.http.destroy()
    agents.https.destroy()
  }
  return a
}

/** Headers that frame the message or concern one connection: the fetcher sets framing itself. */
const HOP_BY_HOP = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate'])

/** Parses and checks the URL's shape (scheme, host). */
function parseUrl(raw: string): URL {
  let u: URL
  try { u = new URL(raw) } catch { throw new SafeFetchError('invalid_url', `Not a URL: ${raw.slice(0, 200)}`) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new SafeFetchError('invalid_url', `Only http and https URLs may be called, not ${u.protocol}`)
  if (!u.hostname) throw new SafeFetchError('invalid_url', 'The URL has no host')
  return u
}

const isLocalhostName = (h: string) => h === 'localhost' || h.endsWith('.localhost')

/** The addresses of `host`, IP literals as they are. */
async function resolveHost(host: string, dnsServers: readonly string[]): Promise<string[]> {
  const literal = parseIp(host)
  if (literal) return [formatIp(literal)]
  // RFC 6761: localhost names are loopback whatever a DNS server says.
  if (isLocalhostName(host)) return ['127.0.0.1', '::1']
  try {
    if (!dnsServers.length) {
      const found = await systemLookup(host, { all: true, verbatim: true })
      return found.map((a) => a.address)
    }
    const r = resolverFor({ dnsServers: [...dnsServers] })
    const [a, aaaa] = await Promise.allSettled([r.resolveA(host), r.resolveAAAA(host)])
    const out = [...(a.status === 'fulfilled' ? a.value : []), ...(aaaa.status === 'fulfilled' ? aaaa.value : [])]
    if (out.length) return out
    const err = a.status === 'rejected' ? a.reason : aaaa.status === 'rejected' ? aaaa.reason : null
    throw err ?? new Error('no A or AAAA record')
  } catch (err) {
    throw new SafeFetchError('dns', `Could not resolve ${host}: ${(err as Error).message}`)
  }
}

/** The address to connect to for `host`: resolved once and checked (chooseAddress). */
async function checkedAddress(host: string, port: string, allow: readonly string[], dnsServers: readonly string[]): Promise<string> {
  const choice = chooseAddress(host, await resolveHost(host, dnsServers), allow, port)
  if (!choice) throw new SafeFetchError('dns', `${host} has no address`)
  if (!choice.ok) {
    const shown = parseIp(host) ? host : `${host} (${choice.address})`
    throw new SafeFetchError('blocked', `Refused to connect to ${shown} on port ${port}: a ${choice.reason} address. An operator can allow the host (or host:port) with MAILCTL_WEBHOOK_ALLOW_HOSTS.`)
  }
  return choice.address
}

interface OneResponse { status: number; headers: Record<string, string>; body: string; truncated: boolean }

function requestOnce(u: URL, address: string, init: SafeFetchInit, opts: { maxBodyBytes: number; ca?: string | string[]; signal: AbortSignal; pool?: string }): Promise<OneResponse> {
  const secure = u.protocol === 'https:'
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(init.headers ?? {})) if (!HOP_BY_HOP.has(k.toLowerCase())) headers[k] = v
  headers.host = u.host
  if ((u.username || u.password) && !Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) {
    headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`
  }
  const body = init.body === undefined ? undefined : typeof init.body === 'string' ? Buffer.from(init.body) : Buffer.from(init.body)
  if (body) headers['content-length'] = String(body.length)
  const agents = opts.pool === undefined ? null : agentsOf(opts.pool)
  if (!agents) headers.connection = 'close'
  const hostIsName = !parseIp(u.hostname)
  const options: https.RequestOptions = {
    host: address,
    family: address.includes(':') ? 6 : 4,
    port: u.port ? Number(u.port) : secure ? 443 : 80,
    path: `${u.pathname}${u.search}`,
    method: init.method ?? 'GET',
    headers,
    agent: agents ? (secure ? agents.https : agents.http) : false,
    signal: opts.signal,
  }
  if (secure) {
    // The certificate is checked against the name, while the socket goes to the checked address.
    if (hostIsName) options.servername = u.hostname
    if (opts.ca) options.ca = opts.ca
  }
  return new Promise<OneResponse>((resolve, reject) => {
    const req = (secure ? https : http).request(options, (res) => {
      const chunks: Buffer[] = []
      let size = 0
      let truncated = false
      let done = false
      const finish = () => {
        if (done) return
        done = true
        const out: Record<string, string> = {}
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v
        resolve({ status: res.statusCode ?? 0, headers: storableCopy(out), body: storableCopy(Buffer.concat(chunks).toString('utf8')), truncated })
      }
      res.on('data', (chunk: Buffer) => {
        if (done) return
        const room = opts.maxBodyBytes - size
        if (chunk.length > room) {
          if (room > 0) chunks.push(chunk.subarray(0, room))
          size = opts.maxBodyBytes
          truncated = true
          finish()
          res.destroy()
          return
        }
        chunks.push(chunk)
        size += chunk.length
      })
      res.on('end', finish)
      res.on('error', (err) => { if (!done) { done = true; reject(err) } })
    })
    req.on('error', reject)
    req.end(body)
  })
}

/**
 * Makes one guarded HTTP(S) request; see the top of this file for the rules. `init.body` is sent as given
 * (set its content-type in `init.headers`).
 */
/** A URL's port, the scheme's default when it names none. */
function portOf(u: URL): string {
  return u.port || (u.protocol === 'https:' ? '443' : '80')
}

export async function safeFetch(url: string, init: SafeFetchInit = {}, opts: SafeFetchOptions = {}): Promise<SafeResponse> {
  const allow = parseAllowList(opts.allowHosts ?? [])
  const dnsServers = opts.dnsServers ?? []
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const controller = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => { timedOut = true; controller.abort() }, timeoutMs)
  const onAbort = () => controller.abort()
  opts.signal?.addEventListener('abort', onAbort, { once: true })
  if (opts.signal?.aborted) controller.abort()
  // Every await below races the timeout, DNS included.
  const aborted = new Promise<never>((_, reject) => {
    const fail = () => reject(timedOut
      ? new SafeFetchError('timeout', `No complete answer within ${timeoutMs} ms`)
      : new SafeFetchError('aborted', 'The request was cancelled'))
    if (controller.signal.aborted) fail()
    else controller.signal.addEventListener('abort', fail, { once: true })
  })
  aborted.catch(() => {})
  try {
    let u = parseUrl(url)
    const firstHost = u.hostname.toLowerCase()
    const firstPort = portOf(u)
    let method = init.method ?? 'GET'
    let body = init.body
    for (let hop = 0; ; hop++) {
      const address = await Promise.race([checkedAddress(u.hostname, portOf(u), allow, dnsServers), aborted])
      let res: OneResponse
      try {
        res = await Promise.race([requestOnce(u, address, { ...init, method, body }, { maxBodyBytes, ca: opts.ca, signal: controller.signal, pool: opts.pool }), aborted])
      } catch (err) {
        if (err instanceof SafeFetchError) throw err
        if (controller.signal.aborted) throw await aborted.catch((e) => e)
        throw new SafeFetchError('connect', `Request to ${u.host} failed: ${(err as Error).message}`)
      }
      const location = res.headers.location
      if (res.status >= 300 && res.status < 400 && res.status !== 304 && location) {
        let next: URL
        try { next = new URL(location, u) } catch { return { ...res, url: u.toString(), address } }
        if (next.protocol !== 'http:' && next.protocol !== 'https:') {
          throw new SafeFetchError('redirect', `Refused to follow a redirect from ${u.host} to a ${next.protocol} URL`)
        }
        // Only to the host and port already checked and allowed: another host, or the same host on another
        // port (another service), is refused even when the allow-list names it.
        if (next.hostname.toLowerCase() !== firstHost) {
          throw new SafeFetchError('redirect', `Refused to follow a redirect from ${u.host} to another host (${next.host})`)
        }
        if (portOf(next) !== firstPort) {
          throw new SafeFetchError('redirect', `Refused to follow a redirect from ${u.host} to another port (${next.host})`)
        }
        if (hop >= maxRedirects) throw new SafeFetchError('redirect', `More than ${maxRedirects} redirects`)
        // As browsers do: 303, and 301/302 after a POST, continue as a GET without a body.
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          method = method === 'HEAD' ? 'HEAD' : 'GET'
          body = undefined
        }
        u = next
        continue
      }
      return { ...res, url: u.toString(), address }
    }
  } finally {
    clearTimeout(timer)
    opts.signal?.removeEventListener('abort', onAbort)
  }
}
