/**
 * The folding of the dashboard's search over the custom fields, for the in-memory copy (chunks.ts), which
 * holds each contact's `data` as its stored JSON text, folded: a term found there makes the contact a
 * candidate, and SQL (repo/query.ts) then tests the candidates' text values exactly. Each character folds
 * to one character: a Latin letter (U+0041-U+024F) to its base letter ("Ü" and "ü" to "u"), another to the
 * lower case of its upper case when both are one character ("ς", "σ" and "Σ" to "σ"), so that a value the
 * SQL pattern matches (each letter a class of its Latin variants, or of its two cases) folds to text that
 * contains the folded term. Candidates the SQL test rejects (a key, a number, JSON around the values) cost
 * a recheck, not a wrong answer.
 */

const LATIN_BASE: Map<string, string> = (() => {
  const out = new Map<string, string>()
  for (let cp = 0x41; cp <= 0x24f; cp++) {
    const ch = String.fromCodePoint(cp)
    if (!/\p{L}/u.test(ch)) continue
    const base = ch.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase()
    if (base.length === 1 && /[a-z]/.test(base)) out.set(ch, base)
  }
  return out
})()

function foldChar(ch: string): string {
  const base = LATIN_BASE.get(ch)
  if (base) return base
  const up = ch.toUpperCase()
  const low = up.length === ch.length ? up.toLowerCase() : ch.toLowerCase()
  return low.length === ch.length ? low : ch
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

/** `s` folded, character by character. */
export function foldText(s: string): string {
  // ASCII letters fold to their lower case, other printable ASCII characters to themselves.
  if (PRINTABLE_ASCII.test(s)) return s.toLowerCase()
  let out = ''
  for (const ch of s) out += foldChar(ch)
  return out
}

/**
 * True when a value holding `term` holds it unchanged in its JSON text: no quote, backslash, control
 * character, solidus (JSON may escape one) or surrogate (a lone one is escaped; pairs are left out too).
 * Such a term can be looked up in the copy, and pre-tested on the stored text in SQL.
 */
export function searchableTerm(term: string): boolean {
  for (let i = 0; i < term.length; i++) {
    const c = term.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || c === 0x2f || (c >= 0xd800 && c <= 0xdfff)) return false
  }
  return term.length > 0
}
