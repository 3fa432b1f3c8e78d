import { createSocket } from 'node:dgram'
import { getServers } from 'node:dns'
import { readFileSync } from 'node:fs'
import { connect, isIP } from 'node:net'
import { domainToASCII } from 'node:url'
import { decodeMessage, encodeQuery, RCODE, TYPE, WireError, type Message, type QueryType, type RR } from './wire'

/**
 * mailctl's stub resolver: MX, A/AAAA and TXT look-ups over UDP (EDNS0, TCP on truncation) against
 * MAILCTL_DNS_SERVERS (`host[:port]`, comma-separated) or the system's resolvers (/etc/resolv.conf).
 *
 * Why not node:dns: Bun 1.4.5's resolveTxt returns a TXT record made of several character-strings (any
 * 2048-bit DKIM key) as several records, so it cannot be joined back reliably; this client reads the
 * wire format itself and joins each record's strings, whatever the upstream resolver does.
 *
 * Errors are `DnsError`s: NXDOMAIN and NODATA are definitive answers (`notFound`); SERVFAIL, REFUSED,
 * TIMEOUT and the like are temporary (`temporary`) and callers should retry later.
 */

export type DnsErrorCode =
  | 'NXDOMAIN' | 'NODATA' | 'BADNAME'
  | 'SERVFAIL' | 'REFUSED' | 'NOTIMP' | 'FORMERR' | 'TIMEOUT' | 'BADRESP' | 'NETWORK'

export class DnsError extends Error {
  override readonly name = 'DnsError'
  constructor(
    readonly code: DnsErrorCode,
    readonly hostname: string,
    readonly rrtype: QueryType,
    message?: string,
    readonly server?: string,
  ) {
    super(message ?? `${rrtype} ${hostname}: ${code}`)
  }

  /** The name does not exist (NXDOMAIN) or has no record of this type (NODATA): a definitive answer. */
  get notFound(): boolean { return this.code === 'NXDOMAIN' || this.code === 'NODATA' }
  /** The look-up failed without a definitive answer (SERVFAIL, timeout, ...): retry later. */
  get temporary(): boolean { return !this.notFound && this.code !== 'BADNAME' }
}

export function isDnsError(err: unknown): err is DnsError {
  return err instanceof DnsError
}

/** True for NXDOMAIN and NODATA. */
export function isNotFound(err: unknown): boolean {
  return err instanceof DnsError && err.notFound
}

export interface MxRecord { exchange: string; priority: number }
export interface MxAnswer {
  /** Mail exchangers, lowest preference value first (ties by name), without the null MX. */
  records: MxRecord[]
  /** RFC 7505: the domain publishes `MX 0 .`, it accepts no mail. */
  nullMx: boolean
}

export interface ResolverOptions {
  /** `host[:port]` list (IPv6 as `[::1]:53`); empty or absent: the system's resolvers. */
  servers?: string[]
  /** Per try, in ms. Default 2000. */
  timeoutMs?: number
  /** Rounds over the whole server list. Default 2. */
  attempts?: number
  /** Cache answers for their TTL (at most 5 minutes; negative answers by the SOA minimum). Default off. */
  cache?: boolean
}

export interface Resolver {
  resolveMx(name: string): Promise<MxAnswer>
  /** Each TXT record with its character-strings joined, decoded as UTF-8. */
  resolveTxt(name: string): Promise<string[]>
  /** Each TXT record as its separate character-strings (diagnostics). */
  resolveTxtStrings(name: string): Promise<string[][]>
  resolveA(name: string): Promise<string[]>
  resolveAAAA(name: string): Promise<string[]>
}

interface Server { host: string; port: number; family: 4 | 6; label: string }

/** Parses `host[:port]`, `[v6]:port` or a bare IPv6 address. Throws on anything that is not an IP. */
export function parseServer(spec: string): Server {
  const s = spec.trim()
  let host = s
  let port = 53
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(s)
  if (bracket) {
    host = bracket[1]
    if (bracket[2]) port = Number(bracket[2])
  } else if (isIP(s) !== 6) {
    const m = /^([^:]+):(\d+)$/.exec(s)
    if (m) { host = m[1]; port = Number(m[2]) }
  }
  if (host === 'localhost') host = '127.0.0.1'
  host = host.replace(/%.*$/, '')
  const family = isIP(host)
  if (!family || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`Invalid DNS server "${spec}": use an IP address with an optional port (host[:port])`)
  }
  return { host, port, family: family as 4 | 6, label: family === 6 ? `[${host}]:${port}` : `${host}:${port}` }
}

let systemCache: { at: number; servers: Server[] } | null = null

/** The system's resolvers: /etc/resolv.conf, else node:dns's list, else 127.0.0.1 (re-read every 30 s). */
export function systemServers(): Server[] {
  if (systemCache && Date.now() - systemCache.at < 30_000) return systemCache.servers
  const found: Server[] = []
  try {
    for (const line of readFileSync('/etc/resolv.conf', 'utf8').split('\n')) {
      const m = /^\s*nameserver\s+(\S+)/.exec(line)
      if (!m) continue
      try { found.push(parseServer(isIP(m[1].replace(/%.*$/, '')) === 6 ? `[${m[1]}]` : m[1])) } catch { /* skip */ }
    }
  } catch { /* no resolv.conf */ }
  if (!found.length) {
    for (const s of getServers()) {
      try { found.push(parseServer(s)) } catch { /* skip */ }
    }
  }
  if (!found.length) found.push(parseServer('127.0.0.1'))
  systemCache = { at: Date.now(), servers: found }
  return found
}

/** ASCII query name without trailing dot, or a BADNAME error. */
function queryName(name: string, type: QueryType): string {
  let n = name.trim().replace(/\.$/, '')
  if (/[^\x21-\x7e]/.test(n)) n = domainToASCII(n)
  n = n.toLowerCase()
  const labels = n.split('.')
  if (!n || n.length > 253 || labels.some((l) => !l || l.length > 63)) {
    throw new DnsError('BADNAME', name, type, `${type} ${name}: not a valid domain name`)
  }
  return n
}

function sendUdp(server: Server, query: Uint8Array, id: number, timeoutMs: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const sock = createSocket(server.family === 6 ? 'udp6' : 'udp4')
    let done = false
    const finish = (err: Error | null, msg?: Uint8Array) => {
      if (done) return
      done = true
      clearTimeout(timer)
      try { sock.close() } catch { /* already closed */ }
      if (err) reject(err)
      else if (msg) resolve(msg)
      else reject(new Error('DNS exchange finished without an error or an answer'))
    }
    const timer = setTimeout(() => finish(Object.assign(new Error('timeout'), { code: 'ETIMEOUT' })), timeoutMs)
    sock.on('error', (err) => finish(err))
    sock.on('message', (msg, rinfo) => {
      // Ignore anything that is not the answer to this query from this server (spoofing, stale packets).
      if (rinfo.port !== server.port || msg.length < 2 || msg.readUInt16BE(0) !== id) return
      if (rinfo.address !== server.host && !(server.family === 6 && rinfo.address.replace(/%.*$/, '') === server.host)) return
      finish(null, new Uint8Array(msg))
    })
    sock.send(query, server.port, server.host, (err) => { if (err) finish(err) })
  })
}

function sendTcp(server: Server, query: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: server.host, port: server.port })
    let buf = Buffer.alloc(0)
    let done = false
    const finish = (err: Error | null, msg?: Uint8Array) => {
      if (done) return
      done = true
      clearTimeout(timer)
      sock.destroy()
      if (err) reject(err)
      else if (msg) resolve(msg)
      else reject(new Error('DNS exchange finished without an error or an answer'))
    }
    const timer = setTimeout(() => finish(Object.assign(new Error('timeout'), { code: 'ETIMEOUT' })), timeoutMs)
    sock.on('error', (err) => finish(err))
    sock.on('connect', () => {
      const len = Buffer.alloc(2)
      len.writeUInt16BE(query.length)
      sock.write(Buffer.concat([len, query]))
    })
    sock.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) finish(null, new Uint8Array(buf.subarray(2, 2 + buf.readUInt16BE(0))))
    })
    sock.on('end', () => finish(new Error('connection closed before a full answer')))
  })
}

const RCODE_ERROR: Record<number, DnsErrorCode> = {
  [RCODE.FORMERR]: 'FORMERR', [RCODE.SERVFAIL]: 'SERVFAIL', [RCODE.NOTIMP]: 'NOTIMP', [RCODE.REFUSED]: 'REFUSED',
}

interface Answer { records: RR[]; ttl: number }
type Outcome = { ok: true; answer: Answer } | { ok: false; error: DnsError; ttl: number }

/** Records of `type` owned by `name` or a name it CNAMEs to (the chain a recursive resolver returns). */
function select(msg: Message, name: string, type: QueryType): RR[] {
  const chain = new Set([name])
  let current = name
  for (let i = 0; i < 16; i++) {
    const c = msg.answers.find((rr) => rr.type === 'CNAME' && rr.name.toLowerCase() === current)
    if (c?.type !== 'CNAME') break
    current = c.target.toLowerCase()
    if (chain.has(current)) break
    chain.add(current)
  }
  return msg.answers.filter((rr) => rr.type === type && chain.has(rr.name.toLowerCase()))
}

function negativeTtl(msg: Message): number {
  const soa = msg.authority.find((rr) => rr.type === 'SOA')
  return soa && soa.type === 'SOA' ? Math.min(soa.ttl, soa.minimum) : 60
}

async function exchange(server: Server, name: string, type: QueryType, timeoutMs: number): Promise<Outcome> {
  let edns = true
  for (let round = 0; round < 2; round++) {
    const id = (Math.random() * 0x10000) >>> 0
    const query = encodeQuery(id, name, type, edns)
    let msg: Message
    try {
      msg = decodeMessage(await sendUdp(server, query, id, timeoutMs))
      if (msg.truncated) msg = decodeMessage(await sendTcp(server, query, timeoutMs))
    } catch (err) {
      const code: DnsErrorCode = err instanceof WireError ? 'BADRESP'
        : (err as NodeJS.ErrnoException).code === 'ETIMEOUT' ? 'TIMEOUT' : 'NETWORK'
      return { ok: false, ttl: 0, error: new DnsError(code, name, type, `${type} ${name} via ${server.label}: ${code} (${(err as Error).message})`, server.label) }
    }
    if (msg.id !== id || !msg.question || msg.question.name.toLowerCase() !== name || msg.question.type !== TYPE[type]) {
      return { ok: false, ttl: 0, error: new DnsError('BADRESP', name, type, `${type} ${name} via ${server.label}: the answer does not match the question`, server.label) }
    }
    // Servers that do not speak EDNS0 answer FORMERR: ask again without it (RFC 6891 section 7).
    if (msg.rcode === RCODE.FORMERR && edns) { edns = false; continue }
    if (msg.rcode === RCODE.NXDOMAIN) {
      return { ok: false, ttl: negativeTtl(msg), error: new DnsError('NXDOMAIN', name, type, `${type} ${name}: no such domain (NXDOMAIN)`, server.label) }
    }
    if (msg.rcode !== RCODE.NOERROR) {
      const code = RCODE_ERROR[msg.rcode] ?? 'SERVFAIL'
      return { ok: false, ttl: 0, error: new DnsError(code, name, type, `${type} ${name} via ${server.label}: ${code}`, server.label) }
    }
    const records = select(msg, name, type)
    if (!records.length) {
      return { ok: false, ttl: negativeTtl(msg), error: new DnsError('NODATA', name, type, `${type} ${name}: no ${type} record (NODATA)`, server.label) }
    }
    return { ok: true, answer: { records, ttl: Math.min(...records.map((r) => r.ttl)) } }
  }
  return { ok: false, ttl: 0, error: new DnsError('FORMERR', name, type, `${type} ${name} via ${server.label}: FORMERR`, server.label) }
}

const MAX_CACHE_TTL_S = 300
const MAX_CACHE_ENTRIES = 10_000
const utf8 = new TextDecoder('utf-8')

/** A resolver bound to a server list (each call re-reads the system list when none is given). */
export function createResolver(opts: ResolverOptions = {}): Resolver {
  const fixed = opts.servers?.length ? opts.servers.map(parseServer) : null
  const timeoutMs = opts.timeoutMs ?? 2000
  const attempts = opts.attempts ?? 2
  const cache = opts.cache ? new Map<string, { expires: number; outcome: Outcome }>() : null
  const inflight = new Map<string, Promise<Outcome>>()

  async function lookup(name: string, type: QueryType): Promise<Outcome> {
    const servers = fixed ?? systemServers()
    let last: Outcome | null = null
    for (let a = 0; a < attempts; a++) {
      for (const server of servers) {
        const outcome = await exchange(server, name, type, timeoutMs)
        if (outcome.ok || !outcome.error.temporary) return outcome
        last = outcome
      }
    }
    if (!last) throw new Error(`DNS lookup of ${name} asked no server (no servers, or attempts is 0)`)
    return last
  }

  async function query(rawName: string, type: QueryType): Promise<RR[]> {
    const name = queryName(rawName, type)
    const key = `${type} ${name}`
    const hit = cache?.get(key)
    let outcome: Outcome
    if (hit && hit.expires > Date.now()) {
      outcome = hit.outcome
    } else {
      let p = inflight.get(key)
      if (!p) {
        p = lookup(name, type).finally(() => inflight.delete(key))
        inflight.set(key, p)
      }
      outcome = await p
      const ttl = Math.min(MAX_CACHE_TTL_S, outcome.ok ? outcome.answer.ttl : outcome.error.notFound ? outcome.ttl : 0)
      if (cache && ttl > 0) {
        if (cache.size >= MAX_CACHE_ENTRIES) cache.delete(cache.keys().next().value as string)
        cache.set(key, { expires: Date.now() + ttl * 1000, outcome })
      }
    }
    if (!outcome.ok) throw outcome.error
    return outcome.answer.records
  }

  async function txtStrings(name: string): Promise<Uint8Array[][]> {
    const rrs = await query(name, 'TXT')
    return rrs.flatMap((rr) => (rr.type === 'TXT' ? [rr.strings] : []))
  }

  return {
    async resolveMx(name) {
      const rrs = await query(name, 'MX')
      let nullMx = false
      const records: MxRecord[] = []
      for (const rr of rrs) {
        if (rr.type !== 'MX') continue
        if (rr.exchange === '') { nullMx = true; continue }
        records.push({ exchange: rr.exchange.toLowerCase(), priority: rr.priority })
      }
      records.sort((a, b) => a.priority - b.priority || a.exchange.localeCompare(b.exchange))
      return { records: nullMx ? [] : records, nullMx }
    },
    async resolveTxt(name) {
      return (await txtStrings(name)).map((parts) => utf8.decode(Buffer.concat(parts)))
    },
    async resolveTxtStrings(name) {
      return (await txtStrings(name)).map((parts) => parts.map((p) => utf8.decode(p)))
    },
    async resolveA(name) {
      return (await query(name, 'A')).flatMap((rr) => (rr.type === 'A' ? [rr.address] : []))
    },
    async resolveAAAA(name) {
      return (await query(name, 'AAAA')).flatMap((rr) => (rr.type === 'AAAA' ? [rr.address] : []))
    },
  }
}

const shared = new Map<string, Resolver>()

/**
 * The process-wide resolver for a configuration (MAILCTL_DNS_SERVERS), memoised so that its cache is
 * shared. Use `{ cache: true }` for delivery (MX look-ups per message); verification wants fresh answers.
 */
export function resolverFor(config: { dnsServers: string[] }, opts: Omit<ResolverOptions, 'servers'> = {}): Resolver {
  const key = JSON.stringify([config.dnsServers, opts.cache ?? false, opts.timeoutMs ?? null, opts.attempts ?? null])
  let r = shared.get(key)
  if (!r) {
    r = createResolver({ ...opts, servers: config.dnsServers })
    shared.set(key, r)
  }
  return r
}

/** One-off look-ups (no cache) against `opts.servers` or the system's resolvers. */
export const resolveMx = (name: string, opts: ResolverOptions = {}) => createResolver(opts).resolveMx(name)
export const resolveTxt = (name: string, opts: ResolverOptions = {}) => createResolver(opts).resolveTxt(name)
