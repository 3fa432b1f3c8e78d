/**
 * A real authoritative-style DNS server on 127.0.0.1 (dns2's UDP and TCP servers on one random port)
 * serving a zone the test sets and changes. Point MAILCTL_DNS_SERVERS (config.dnsServers) at `server`.
 *
 *   const dns = await startTestDns()
 *   dns.set('example.com', [{ type: 'MX', exchange: 'mx.example.com', priority: 10 }])
 *   dns.set('sel._domainkey.example.com', [{ type: 'TXT', data: splitTxt(value) }])   // multi-string TXT
 *   dns.set('example.com', [nullMx()])
 *   dns.fail('broken.example', 'SERVFAIL')       // or 'REFUSED', or 'TIMEOUT' (never answers)
 *
 * Names absent from the zone answer NXDOMAIN; a name with records of other types answers NODATA
 * (with an SOA in the authority section, as real servers do). UDP answers larger than `udpLimit` bytes
 * (512, classic DNS) are sent truncated (TC) so that clients retry over TCP.
 */
import type { RemoteInfo } from 'node:dgram'
import { Packet, createTCPServer, createUDPServer, type Handler, type Resource, type TCPServer, type UDPServer } from 'dns2'

export type ZoneRecord =
  | { type: 'A'; address: string; ttl?: number }
  | { type: 'AAAA'; address: string; ttl?: number }
  | { type: 'MX'; exchange: string; priority: number; ttl?: number }
  /** One TXT record; an array publishes several character-strings in that one record. */
  | { type: 'TXT'; data: string | Array<string | Uint8Array>; ttl?: number }
  | { type: 'CNAME'; target: string; ttl?: number }

export type Failure = 'SERVFAIL' | 'REFUSED' | 'TIMEOUT'

export interface QueryLog { name: string; type: number; transport: 'udp' | 'tcp' }

/** Splits a long TXT value into character-strings of at most `size` bytes (255 is the DNS maximum). */
export function splitTxt(value: string, size = 255): string[] {
  const out: string[] = []
  for (let i = 0; i < value.length; i += size) out.push(value.slice(i, i + size))
  return out.length ? out : ['']
}

/** RFC 7505 "this domain accepts no mail": `MX 0 .` */
export function nullMx(): ZoneRecord {
  return { type: 'MX', exchange: '', priority: 0 }
}

const norm = (name: string) => name.toLowerCase().replace(/\.$/, '')

export class TestDns {
  readonly zone = new Map<string, ZoneRecord[]>()
  readonly failures = new Map<string, Failure>()
  readonly queries: QueryLog[] = []
  udpLimit = 512
  port = 0

  constructor(private udp: UDPServer, private tcp: TCPServer) {}

  /** `127.0.0.1:<port>`, for config.dnsServers. */
  get server(): string { return `127.0.0.1:${this.port}` }

  /** Replaces every record at `name`. */
  set(name: string, records: ZoneRecord[]): this {
    this.zone.set(norm(name), records)
    return this
  }

  add(name: string, record: ZoneRecord): this {
    const n = norm(name)
    this.zone.set(n, [...(this.zone.get(n) ?? []), record])
    return this
  }

  /** Removes the records of one type at `name`, or all of them. */
  remove(name: string, type?: ZoneRecord['type']): this {
    const n = norm(name)
    if (!type) this.zone.delete(n)
    else {
      const left = (this.zone.get(n) ?? []).filter((r) => r.type !== type)
      if (left.length) this.zone.set(n, left)
      else this.zone.delete(n)
    }
    return this
  }

  fail(name: string, how: Failure | null): this {
    if (how) this.failures.set(norm(name), how)
    else this.failures.delete(norm(name))
    return this
  }

  clear(): this {
    this.zone.clear()
    this.failures.clear()
    this.queries.length = 0
    return this
  }

  answer(request: Packet, transport: 'udp' | 'tcp'): Packet | null {
    const response = Packet.createResponseFromRequest(request)
    response.header.aa = 1
    response.header.ra = 1
    const q = request.questions[0]
    if (!q) { response.header.rcode = 1; return response }
    const name = norm(q.name)
    this.queries.push({ name, type: q.type, transport })
    const failure = this.failures.get(name)
    if (failure === 'TIMEOUT') return null
    if (failure) { response.header.rcode = failure === 'SERVFAIL' ? 2 : 5; return response }

    let owner = name
    for (let hops = 0; hops < 8; hops++) {
      const records = this.zone.get(owner)
      if (!records) {
        if (owner === name) response.header.rcode = 3 // NXDOMAIN
        break
      }
      const cname = records.find((r) => r.type === 'CNAME')
      if (cname && cname.type === 'CNAME' && q.type !== Packet.TYPE.CNAME) {
        response.answers.push(this.resource(owner, cname))
        owner = norm(cname.target)
        continue
      }
      for (const r of records) if (Packet.TYPE[r.type] === q.type) response.answers.push(this.resource(owner, r))
      break
    }
    if (!response.answers.length) {
      const apex = name.split('.').slice(-2).join('.')
      response.authorities.push({
        name: apex, type: Packet.TYPE.SOA, class: Packet.CLASS.IN, ttl: 60,
        primary: `ns.${apex}`, admin: `hostmaster.${apex}`, serial: 1, refresh: 3600, retry: 600, expiration: 86400, minimum: 60,
      })
    }
    return response
  }

  private resource(name: string, r: ZoneRecord): Resource {
    const base = { name, type: Packet.TYPE[r.type], class: Packet.CLASS.IN, ttl: r.ttl ?? 300 }
    switch (r.type) {
      case 'A': case 'AAAA': return { ...base, address: r.address }
      case 'MX': return { ...base, exchange: r.exchange, priority: r.priority }
      case 'TXT': return { ...base, data: r.data }
      case 'CNAME': return { ...base, domain: r.target }
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.udp.close(() => resolve()))
    await new Promise<void>((resolve) => this.tcp.close(() => resolve()))
  }
}

/** Starts the server on 127.0.0.1, UDP and TCP on the same random port. */
export async function startTestDns(): Promise<TestDns> {
  let dns: TestDns | null = null
  const onUdp: Handler = (request, send) => {
    const server = dns
    if (!server) return
    const response = server.answer(request, 'udp')
    if (!response) return
    let buf = response.toBuffer()
    if (buf.length > server.udpLimit) {
      response.header.tc = 1
      response.answers = []
      response.authorities = []
      buf = response.toBuffer()
    }
    // A resolver that gave up (its socket closed) refuses the answer: nothing to do about it.
    Promise.resolve(send(buf)).catch(() => {})
  }
  const onTcp: Handler = (request, send) => {
    const response = dns?.answer(request, 'tcp')
    if (response) send(response)
  }
  for (let tries = 0; ; tries++) {
    const udp = createUDPServer(onUdp)
    const tcp = createTCPServer(onTcp)
    await udp.listen(0, '127.0.0.1')
    const port = (udp.address() as RemoteInfo).port
    const ok = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false))
      tcp.listen(port, '127.0.0.1', () => resolve(true))
    })
    if (ok) {
      dns = new TestDns(udp, tcp)
      dns.port = port
      return dns
    }
    udp.close()
    if (tries > 20) throw new Error('could not bind UDP and TCP on one port')
  }
}
