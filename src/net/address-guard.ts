/**
 * The pure half of the outbound HTTP guard (src/net/safe-fetch.ts): which IP addresses a request made on a
 * customer's behalf (a workflow WEBHOOK step, a customer webhook) may connect to, and which hosts the
 * operator allowed anyway (MAILCTL_WEBHOOK_ALLOW_HOSTS; direct mail delivery uses the same check with
 * MAILCTL_DELIVERY_ALLOW_HOSTS, src/mail/outbound/guard.ts). No I/O here: the fetcher resolves a name, asks
 * `forbiddenReason` about every address, and connects to the address it checked.
 *
 * Addresses are parsed the permissive way a URL parser or `inet_aton` would, so spellings such as `127.1`,
 * `2130706433`, `0x7f.0.0.1`, `0177.0.0.1` and `::ffff:7f00:1` are recognised for what they are. IPv6
 * forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4, translated) are judged by that IPv4
 * address.
 */

/** Why an address is refused; null means it is a public unicast address. */
export type ForbiddenReason =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'shared (CGNAT)'
  | 'unique-local'
  | 'cloud metadata'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'documentation'
  | 'teredo'

/** An IPv4 address as 4 bytes or an IPv6 address as 16, or null when `text` is neither. */
export function parseIp(text: string): Uint8Array | null {
  let s = text.trim()
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1)
  if (s.includes(':')) return parseIPv6(s)
  return parseIPv4(s)
}

/**
 * IPv4 the way WHATWG URL and inet_aton read it: one to four parts, each decimal, octal (leading 0) or hex
 * (0x), the last part filling the remaining bytes; one trailing dot allowed.
 */
export function parseIPv4(text: string): Uint8Array | null {
  const s = text.endsWith('.') ? text.slice(0, -1) : text
  if (!s) return null
  const parts = s.split('.')
  if (parts.length > 4) return null
  const nums: number[] = []
  for (const p of parts) {
    let n: number
    if (/^0x[0-9a-f]*$/i.test(p)) n = p.length === 2 ? 0 : Number.parseInt(p.slice(2), 16)
    else if (/^0[0-7]+$/.test(p)) n = Number.parseInt(p.slice(1), 8)
    else if (/^(0|[1-9][0-9]*)$/.test(p)) n = Number(p)
    else return null
    if (!Number.isSafeInteger(n)) return null
    nums.push(n)
  }
  const last = nums.pop() as number
  for (const n of nums) if (n > 255) return null
  const lastBytes = 4 - nums.length
  if (last >= 256 ** lastBytes) return null
  const out = new Uint8Array(4)
  nums.forEach((n, i) => { out[i] = n })
  for (let i = 0; i < lastBytes; i++) out[3 - i] = Math.floor(last / 256 ** i) % 256
  return out
}

/** Strict dotted quad (the tail of an IPv6 address). */
function dottedQuad(text: string): number[] | null {
  const parts = text.split('.')
  if (parts.length !== 4) return null
  const out: number[] = []
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return null
    const n = Number(p)
    if (n > 255) return null
    out.push(n)
  }
  return out
}

/** IPv6 text (RFC 4291 section 2.2, with a dotted IPv4 tail and an optional %zone) as 16 bytes. */
export function parseIPv6(text: string): Uint8Array | null {
  const s = text.replace(/%.*$/, '')
  if (!/^[0-9a-f:.]+$/i.test(s)) return null
  const halves = s.split('::')
  if (halves.length > 2) return null
  const groups = (half: string): number[] | null => {
    if (half === '') return []
    const out: number[] = []
    const parts = half.split(':')
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]
      if (i === parts.length - 1 && p.includes('.')) {
        const q = dottedQuad(p)
        if (!q) return null
        out.push((q[0] << 8) | q[1], (q[2] << 8) | q[3])
      } else {
        if (!/^[0-9a-f]{1,4}$/i.test(p)) return null
        out.push(Number.parseInt(p, 16))
      }
    }
    return out
  }
  const head = groups(halves[0])
  const tail = halves.length === 2 ? groups(halves[1]) : []
  if (!head || !tail) return null
  // An IPv4 tail is only allowed at the very end.
  if (halves.length === 2 && halves[0].includes('.')) return null
  let all: number[]
  if (halves.length === 2) {
    const fill = 8 - head.length - tail.length
    if (fill < 1) return null
    all = [...head, ...new Array<number>(fill).fill(0), ...tail]
  } else {
    if (head.length !== 8) return null
    all = head
  }
  const out = new Uint8Array(16)
  all.forEach((g, i) => { out[2 * i] = g >> 8; out[2 * i + 1] = g & 0xff })
  return out
}

/** Canonical text of parsed bytes: dotted quad, or RFC 5952 IPv6. */
export function formatIp(bytes: Uint8Array): string {
  if (bytes.length === 4) return Array.from(bytes).join('.')
  const g: number[] = []
  for (let i = 0; i < 16; i += 2) g.push((bytes[i] << 8) | bytes[i + 1])
  // Longest run of zero groups (length >= 2) becomes "::".
  let best = -1, bestLen = 0
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) { i++; continue }
    let j = i
    while (j < 8 && g[j] === 0) j++
    if (j - i > bestLen && j - i >= 2) { best = i; bestLen = j - i }
    i = j
  }
  const hex = (xs: number[]) => xs.map((x) => x.toString(16)).join(':')
  if (best < 0) return hex(g)
  return `${hex(g.slice(0, best))}::${hex(g.slice(best + bestLen))}`
}

const inV4 = (b: Uint8Array, net: [number, number, number, number], bits: number): boolean => {
  const a = ((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0
  const n = ((net[0] << 24) | (net[1] << 16) | (net[2] << 8) | net[3]) >>> 0
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0
  return ((a & mask) >>> 0) === ((n & mask) >>> 0)
}

/** The refused IPv4 ranges, most specific first (the first match names the reason). */
const V4_RULES: Array<[[number, number, number, number], number, ForbiddenReason]> = [
  [[169, 254, 169, 254], 32, 'cloud metadata'],
  [[255, 255, 255, 255], 32, 'broadcast'],
  [[0, 0, 0, 0], 8, 'unspecified'],
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'shared (CGNAT)'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'],
  [[192, 0, 2, 0], 24, 'documentation'],
  [[192, 88, 99, 0], 24, 'reserved'],
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'reserved'],
  [[198, 51, 100, 0], 24, 'documentation'],
  [[203, 0, 113, 0], 24, 'documentation'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'],
]

function v4Reason(b: Uint8Array): ForbiddenReason | null {
  for (const [net, bits, reason] of V4_RULES) if (inV4(b, net, bits)) return reason
  return null
}

const startsWith = (b: Uint8Array, prefix: number[]) => prefix.every((x, i) => b[i] === x)
const zeros = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0)

function v6Reason(b: Uint8Array): ForbiddenReason | null {
  const tail = b.subarray(12, 16)
  if (zeros(b, 0, 16)) return 'unspecified'
  if (zeros(b, 0, 15) && b[15] === 1) return 'loopback'
  // ::a.b.c.d (IPv4-compatible, deprecated) and ::ffff:a.b.c.d (IPv4-mapped): the IPv4 address decides.
  if (zeros(b, 0, 12)) return v4Reason(tail) ?? 'reserved'
  if (zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return v4Reason(tail)
  // ::ffff:0:a.b.c.d (IPv4-translated, RFC 2765).
  if (zeros(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(b, 10, 12)) return v4Reason(tail)
  // 64:ff9b::/96 (NAT64, RFC 6052): the embedded IPv4 address decides; 64:ff9b:1::/48 is local-use.
  if (startsWith(b, [0, 0x64, 0xff, 0x9b]) && zeros(b, 4, 12)) return v4Reason(tail)
  if (startsWith(b, [0, 0x64, 0xff, 0x9b, 0, 1])) return 'private'
  // 2002::/16 (6to4): bytes 2-5 are an IPv4 address.
  if (startsWith(b, [0x20, 0x02])) return v4Reason(b.subarray(2, 6))
  // 2001:0::/32 (Teredo) hides its client's IPv4 address; nothing legitimate needs it for a webhook.
  if (startsWith(b, [0x20, 0x01, 0, 0])) return 'teredo'
  if (startsWith(b, [0x20, 0x01, 0x0d, 0xb8])) return 'documentation'
  if (startsWith(b, [0x01, 0, 0, 0, 0, 0, 0, 0])) return 'reserved' // 100::/64 discard-only
  if (startsWith(b, [0xfd, 0x00, 0x0e, 0xc2]) && zeros(b, 4, 14) && b[14] === 0x02 && b[15] === 0x54) return 'cloud metadata' // fd00:ec2::254
  if ((b[0] & 0xfe) === 0xfc) return 'unique-local' // fc00::/7
  if (b[0] === 0xfe && (b[1] & 0xc0) === 0x80) return 'link-local' // fe80::/10
  if (b[0] === 0xfe && (b[1] & 0xc0) === 0xc0) return 'private' // fec0::/10, deprecated site-local
  if (b[0] === 0xff) return 'multicast'
  // Only 2000::/3 is global unicast; everything else is unassigned or special.
  if ((b[0] & 0xe0) !== 0x20) return 'reserved'
  return null
}

/**
 * Why an outbound request must not connect to `address` (an IP address in any spelling), or null when it
 * may. A string that is not an IP address is refused as 'reserved': the caller resolves names first.
 */
export function forbiddenReason(address: string): ForbiddenReason | null {
  const b = parseIp(address)
  if (!b) return 'reserved'
  return b.length === 4 ? v4Reason(b) : v6Reason(b)
}

/** A host name in the form the allow-list compares: lower case, no trailing dot, IPs canonical, no brackets. */
export function normalizeHost(host: string): string {
  const h = host.trim().toLowerCase().replace(/\.$/, '')
  const ip = parseIp(h)
  return ip ? formatIp(ip) : h.replace(/^\[|\]$/g, '')
}

/**
 * Parses MAILCTL_WEBHOOK_ALLOW_HOSTS and MAILCTL_DELIVERY_ALLOW_HOSTS entries: host names
 * (`hooks.internal`), IP addresses (`10.0.0.5`, `[fd00::5]`), suffix wildcards (`*.internal.example`,
 * which match sub-domains, not the name itself) and CIDR ranges (`127.0.0.0/8`, `fd00::/8`, which match
 * the addresses a name resolves to). A name, address or wildcard may carry a port (`hooks.internal:8080`,
 * `10.0.0.5:443`, `[fd00::5]:8443`, `*.internal.example:443`): such an entry allows that port only, and
 * only where the caller says which port it connects to (see isAllowedHost). Throws on a malformed range
 * or port (the setting is checked at start-up).
 */
export function parseAllowList(entries: readonly string[]): string[] {
  return entries.map((e) => e.trim()).filter(Boolean).map((e) => {
    if (e.includes('/')) {
      const range = parseCidr(e)
      if (!range) throw new Error(`"${e}" is not a CIDR range (an IPv4 or IPv6 address, "/", a prefix length; ranges take no port)`)
      return `${formatIp(range.net)}/${range.bits}`
    }
    const { host, port } = splitHostPort(e)
    if (port === '') throw new Error(`"${e}" has an invalid port (1 to 65535)`)
    const h = host.startsWith('*.') ? `*.${normalizeHost(host.slice(2))}` : normalizeHost(host)
    if (!h || h === '*.') throw new Error(`"${e}" names no host`)
    if (port === null) return h
    return `${h.includes(':') ? `[${h}]` : h}:${port}`
  })
}

/**
 * An allow-list entry (or what an operator wrote) as its host and port: `host:port` and `[v6]:port` carry
 * one; a bare IPv6 address (more than one colon) does not. The port is '' when present but not 1-65535.
 */
function splitHostPort(entry: string): { host: string; port: string | null } {
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(entry)
  if (bracketed) return { host: bracketed[1], port: bracketed[2] === undefined ? null : validPort(bracketed[2]) }
  const colon = entry.indexOf(':')
  if (colon < 0 || colon !== entry.lastIndexOf(':')) return { host: entry, port: null }
  return { host: entry.slice(0, colon), port: validPort(entry.slice(colon + 1)) }
}

function validPort(text: string): string {
  if (!/^\d{1,5}$/.test(text)) return ''
  const n = Number(text)
  return n >= 1 && n <= 65535 ? String(n) : ''
}

/** `10.0.0.0/8` or `fd00::/8` as the network's bytes and prefix length, or null. */
function parseCidr(entry: string): { net: Uint8Array; bits: number } | null {
  const slash = entry.lastIndexOf('/')
  const net = parseIp(entry.slice(0, slash))
  const bitsText = entry.slice(slash + 1)
  if (!net || !/^\d{1,3}$/.test(bitsText)) return null
  const bits = Number(bitsText)
  return bits <= net.length * 8 ? { net, bits } : null
}

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as its IPv4 address; anything else as it is. */
function unmapped(b: Uint8Array): Uint8Array {
  return b.length === 16 && zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff ? b.subarray(12, 16) : b
}

function inRange(address: Uint8Array, range: { net: Uint8Array; bits: number }): boolean {
  const a = unmapped(address)
  if (a.length !== range.net.length) return false
  for (let bit = 0; bit < range.bits; bit += 8) {
    const take = Math.min(8, range.bits - bit)
    const mask = (0xff << (8 - take)) & 0xff
    if ((a[bit / 8] & mask) !== (range.net[bit / 8] & mask)) return false
  }
  return true
}

/**
 * Whether the operator allowed `host` (a URL's hostname or an MX host name) in `allow` (entries of
 * `parseAllowList`), on `port` (the port the caller connects to). An entry without a port allows every
 * port; an entry with a port allows that port only, and nothing when the caller gives no port.
 */
export function isAllowedHost(host: string, allow: readonly string[], port?: number | string): boolean {
  if (!allow.length) return false
  const h = normalizeHost(host)
  const ip = parseIp(h)
  const want = port === undefined ? null : String(Number(port))
  for (const raw of allow) {
    if (raw.includes('/')) {
      const range = ip ? parseCidr(raw) : null
      if (range && ip && inRange(ip, range)) return true
      continue
    }
    const { host: entry, port: entryPort } = splitHostPort(raw)
    if (entryPort !== null && entryPort !== want) continue
    if (entry.startsWith('*.')) {
      if (h.endsWith(entry.slice(1))) return true
    } else if (entry === h) return true
  }
  return false
}

/** Whether the operator allowed the IP address `address` itself (on `port`): an allowed address or CIDR range holds it. */
export function isAllowedAddress(address: string, allow: readonly string[], port?: number | string): boolean {
  return parseIp(address) !== null && isAllowedHost(address, allow, port)
}

export type AddressChoice =
  | { ok: true; address: string }
  | { ok: false; address: string; reason: ForbiddenReason }

/**
 * The address to connect to for `host`, from the addresses it resolved to. A name that resolves to any
 * refused address is refused as a whole (a public name with one private answer is a rebinding attempt)
 * unless the operator allowed that address (an address or CIDR range entry); a host the operator allowed
 * takes its first address unchecked. `port` is the port the connection goes to (entries with a port).
 */
export function chooseAddress(host: string, addresses: readonly string[], allow: readonly string[], port?: number | string): AddressChoice | null {
  if (!addresses.length) return null
  if (isAllowedHost(host, allow, port)) return { ok: true, address: addresses[0] }
  for (const address of addresses) {
    const reason = forbiddenReason(address)
    if (reason && !isAllowedAddress(address, allow, port)) return { ok: false, address, reason }
  }
  return { ok: true, address: addresses[0] }
}
