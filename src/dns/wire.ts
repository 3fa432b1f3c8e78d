/**
 * The DNS wire format (RFC 1035, EDNS0 of RFC 6891): building one query and parsing its response.
 * Only what mailctl looks up is decoded (A, AAAA, MX, TXT, CNAME, SOA); other types are skipped.
 */

export const TYPE = { A: 1, CNAME: 5, SOA: 6, MX: 15, TXT: 16, AAAA: 28, OPT: 41 } as const
export type QueryType = 'A' | 'AAAA' | 'MX' | 'TXT'

export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const

/** A decoded resource record. TXT keeps its character-strings apart (`strings`); callers join them. */
export type RR =
  | { name: string; type: 'A' | 'AAAA'; ttl: number; address: string }
  | { name: string; type: 'MX'; ttl: number; priority: number; exchange: string }
  | { name: string; type: 'TXT'; ttl: number; strings: Uint8Array[] }
  | { name: string; type: 'CNAME'; ttl: number; target: string }
  | { name: string; type: 'SOA'; ttl: number; minimum: number }

export interface Message {
  id: number
  rcode: number
  truncated: boolean
  question: { name: string; type: number } | null
  answers: RR[]
  authority: RR[]
}

export class WireError extends Error {}

/** `name` must already be ASCII (IDNA) with no trailing dot. */
export function encodeQuery(id: number, name: string, type: QueryType, edns: boolean): Uint8Array {
  const labels = name ? name.split('.') : []
  const qname = labels.reduce((n, l) => n + 1 + l.length, 1)
  const buf = new Uint8Array(12 + qname + 4 + (edns ? 11 : 0))
  const v = new DataView(buf.buffer)
  v.setUint16(0, id)
  v.setUint16(2, 0x0100) // RD
  v.setUint16(4, 1)
  v.setUint16(10, edns ? 1 : 0)
  let o = 12
  for (const l of labels) {
    buf[o++] = l.length
    for (let i = 0; i < l.length; i++) buf[o++] = l.charCodeAt(i)
  }
  buf[o++] = 0
  v.setUint16(o, TYPE[type]); o += 2
  v.setUint16(o, 1); o += 2 // IN
  if (edns) {
    buf[o++] = 0 // root
    v.setUint16(o, TYPE.OPT); o += 2
    v.setUint16(o, 1232); o += 2 // UDP payload size (the DNS flag day 2020 figure)
    v.setUint32(o, 0); o += 4
    v.setUint16(o, 0); o += 2
  }
  return buf
}

class Reader {
  private v: DataView
  constructor(readonly buf: Uint8Array, public o = 0) {
    this.v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  }
  need(n: number) { if (this.o + n > this.buf.length) throw new WireError('truncated DNS message') }
  u8() { this.need(1); return this.buf[this.o++] }
  u16() { this.need(2); const x = this.v.getUint16(this.o); this.o += 2; return x }
  u32() { this.need(4); const x = this.v.getUint32(this.o); this.o += 4; return x }
  bytes(n: number) { this.need(n); const b = this.buf.subarray(this.o, this.o + n); this.o += n; return b }

  /** A domain name, following compression pointers (loops and overlong names rejected). */
  name(): string {
    const labels: string[] = []
    let pos = this.o
    let jumped = false
    let jumps = 0
    let length = 0
    for (;;) {
      if (pos >= this.buf.length) throw new WireError('name runs past the message')
      const len = this.buf[pos]
      if ((len & 0xc0) === 0xc0) {
        if (pos + 1 >= this.buf.length) throw new WireError('truncated name pointer')
        if (++jumps > 64) throw new WireError('name compression loop')
        const target = ((len & 0x3f) << 8) | this.buf[pos + 1]
        if (!jumped) this.o = pos + 2
        jumped = true
        pos = target
        continue
      }
      if (len & 0xc0) throw new WireError('unsupported label type')
      pos++
      if (len === 0) break
      if (pos + len > this.buf.length) throw new WireError('label runs past the message')
      length += len + 1
      if (length > 255) throw new WireError('name longer than 255 octets')
      let s = ''
      for (let i = 0; i < len; i++) s += String.fromCharCode(this.buf[pos + i])
      labels.push(s)
      pos += len
    }
    if (!jumped) this.o = pos
    return labels.join('.')
  }
}

function formatIPv6(b: Uint8Array): string {
  const groups: string[] = []
  for (let i = 0; i < 16; i += 2) groups.push(((b[i] << 8) | b[i + 1]).toString(16))
  // The WHATWG URL parser serialises IPv6 in the canonical compressed form of RFC 5952.
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1)
}

function readRR(r: Reader): RR | null {
  const name = r.name()
  const type = r.u16()
  r.u16() // class
  const ttl = r.u32()
  const rdlen = r.u16()
  r.need(rdlen)
  const end = r.o + rdlen
  let rr: RR | null = null
  switch (type) {
    case TYPE.A:
      if (rdlen !== 4) throw new WireError('A record of the wrong length')
      rr = { name, type: 'A', ttl, address: Array.from(r.bytes(4)).join('.') }
      break
    case TYPE.AAAA:
      if (rdlen !== 16) throw new WireError('AAAA record of the wrong length')
      rr = { name, type: 'AAAA', ttl, address: formatIPv6(r.bytes(16)) }
      break
    case TYPE.MX: {
      const priority = r.u16()
      rr = { name, type: 'MX', ttl, priority, exchange: r.name() }
      break
    }
    case TYPE.TXT: {
      const strings: Uint8Array[] = []
      while (r.o < end) {
        const len = r.u8()
        if (r.o + len > end) throw new WireError('TXT string runs past its record')
        strings.push(r.bytes(len))
      }
      rr = { name, type: 'TXT', ttl, strings }
      break
    }
    case TYPE.CNAME:
      rr = { name, type: 'CNAME', ttl, target: r.name() }
      break
    case TYPE.SOA: {
      r.name(); r.name()
      r.u32(); r.u32(); r.u32(); r.u32()
      rr = { name, type: 'SOA', ttl, minimum: r.u32() }
      break
    }
  }
  if (r.o > end) throw new WireError('record data runs past its length')
  r.o = end
  return rr
}

export function decodeMessage(buf: Uint8Array): Message {
  const r = new Reader(buf)
  const id = r.u16()
  const flags = r.u16()
  if (!(flags & 0x8000)) throw new WireError('not a response')
  const qd = r.u16(), an = r.u16(), ns = r.u16()
  r.u16() // additional records are not needed
  let question: Message['question'] = null
  for (let i = 0; i < qd; i++) {
    const name = r.name()
    const type = r.u16()
    r.u16()
    if (i === 0) question = { name, type }
  }
  const answers: RR[] = []
  const authority: RR[] = []
  const truncated = (flags & 0x0200) !== 0
  try {
    for (let i = 0; i < an; i++) { const rr = readRR(r); if (rr) answers.push(rr) }
    for (let i = 0; i < ns; i++) { const rr = readRR(r); if (rr) authority.push(rr) }
  } catch (err) {
    // A truncated UDP answer may stop mid-record: the caller retries over TCP.
    if (!truncated) throw err
  }
  return { id, rcode: flags & 0x0f, truncated, question, answers, authority }
}
