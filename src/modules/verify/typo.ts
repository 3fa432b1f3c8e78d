import { POPULAR_DOMAINS, TLD_TYPOS } from './lists'

const POPULAR = new Set<string>(POPULAR_DOMAINS)

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions), capped at `max + 1`. */
export function editDistance(a: string, b: string, max = 3): number {
  if (Math.abs(a.length - b.length) > max) return max + 1
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    let rowMin = Infinity
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
      rowMin = Math.min(rowMin, d[i][j])
    }
    if (rowMin > max) return max + 1
  }
  return d[a.length][b.length]
}

/** Splits a domain into its name and its public suffix, the suffix being one label or a known two-label one. */
function split(domain: string): { name: string; tld: string } {
  const m = /^(.+?)\.((?:co|com|net|org|ac|gov|edu)\.[a-z]{1,3}|[^.]+)$/.exec(domain)
  return m ? { name: m[1], tld: m[2] } : { name: domain, tld: '' }
}

/**
 * A popular provider the (ASCII, lower-case) domain is probably a typo of, or null. Rules:
 * - a popular domain is never a typo;
 * - the names are compared by edit distance (with transpositions): at most 1 edit for names of 4-5
 *   characters, 2 for longer ones; names of 3 characters or fewer (aol, msn, qq) only by their TLD;
 * - the TLD must match, be a known TLD typo of it (`con`, `cmo`, `co` -> `com`...), or be one edit away
 *   for TLDs of three letters or more;
 * - the total (name edits + 1 for a TLD change) is 1 or 2; the lowest total wins, ties by popularity;
 * - a domain without a dot that is a popular domain with its dot dropped ("gmailcom") is a typo too.
 */
export function suggestDomain(domain: string): string | null {
  const d = domain.toLowerCase()
  if (POPULAR.has(d)) return null
  if (!d.includes('.')) {
    for (const p of POPULAR_DOMAINS) if (p.replace(/\./g, '') === d) return p
    return null
  }
  const { name, tld } = split(d)
  let best: { domain: string; cost: number } | null = null
  for (const p of POPULAR_DOMAINS) {
    const q = split(p)
    const tldCost = tld === q.tld ? 0 : TLD_TYPOS[tld] === q.tld || (q.tld.length >= 3 && editDistance(tld, q.tld, 1) <= 1) ? 1 : -1
    if (tldCost < 0) continue
    const allowed = q.name.length <= 3 ? 0 : q.name.length <= 5 ? 1 : 2
    const nameCost = name === q.name ? 0 : editDistance(name, q.name, allowed)
    if (nameCost > allowed) continue
    const cost = nameCost + tldCost
    if (cost === 0 || cost > 2) continue
    if (!best || cost < best.cost) best = { domain: p, cost }
  }
  return best?.domain ?? null
}
