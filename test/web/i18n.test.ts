import { afterAll, expect, test } from 'bun:test'
import { formatDate, formatNumber, formatPercent, setFormatLocale } from '../../web/format'
import { de } from '../../web/i18n/de'
import { en } from '../../web/i18n/en'
import { editorDe } from '../../web/i18n/editor-de'
import { editorEn } from '../../web/i18n/editor-en'
import { addCatalogue, type Message, t, useLanguageForTest } from '../../web/i18n'

/**
 * The message catalogue (issue 37, item 7): German has every key of English and no other, each message with
 * the same placeholders and, where English has plural forms, both forms; `t` fills placeholders, picks the
 * plural form and formats counts in the locale; the one formatter follows the locale.
 */
const placeholders = (m: string | { one: string; other: string }) =>
  [...new Set((typeof m === 'string' ? m : `${m.one} ${m.other}`).match(/\{\w+\}/g) ?? [])].sort()

afterAll(async () => { await useLanguageForTest('en') })

test('German has exactly the keys of English, none empty, with the same placeholders and plural forms (the dashboard\'s part and the editor\'s)', () => {
  for (const [english, german] of [[en, de], [editorEn, editorDe]] as Array<[Record<string, Message>, Record<string, Message>]>) sameShape(english, german)
  // The parts share no key: one key, one message.
  expect(Object.keys(editorEn).filter((k) => k in en)).toEqual([])
})

function sameShape(english: Record<string, Message>, german: Record<string, Message>) {
  expect(Object.keys(german).sort()).toEqual(Object.keys(english).sort())
  for (const [key, m] of Object.entries(english)) {
    const g = german[key]
    expect({ key, kind: typeof g }).toEqual({ key, kind: typeof m })
    if (typeof g === 'string') expect({ key, empty: g.trim() === '' }).toEqual({ key, empty: false })
    else expect({ key, one: g.one.trim() !== '', other: g.other.trim() !== '' }).toEqual({ key, one: true, other: true })
    // A plural message names its count in its "other" form at least (the one form may say "the contact").
    expect({ key, placeholders: placeholders(g) }).toEqual({ key, placeholders: placeholders(m) })
  }
}

test('the German catalogue is German: most messages differ from the English ones', () => {
  for (const [english, german] of [[en, de], [editorEn, editorDe]] as Array<[Record<string, Message>, Record<string, Message>]>) {
    const same = Object.keys(english).filter((k) => JSON.stringify(german[k]) === JSON.stringify(english[k]))
    // Words both languages share (Workflows, Domains, Segment, System, HTML) are allowed, but only a few.
    expect(same.length).toBeLessThan(Object.keys(english).length / 10)
  }
})

test('the editor\'s part joins the catalogue where it is added, in the language in effect', async () => {
  await useLanguageForTest('de')
  addCatalogue({ en: editorEn, de: editorDe })
  expect(t('ed.textColour')).toBe('Textfarbe')
  expect(t('nav.contacts')).toBe('Kontakte')
  await useLanguageForTest('en')
  expect(t('ed.textColour')).toBe('Text colour')
  expect(t('ed.columnsHint', { n: 2 })).toBe('2 columns, side by side on desktop and stacked on phones.')
})

test('t fills placeholders, picks the plural form and formats counts in the language', async () => {
  await useLanguageForTest('en')
  expect(t('contacts.count', { count: 1 })).toBe('1 contact')
  expect(t('contacts.count', { count: 1234 })).toBe('1,234 contacts')
  expect(t('shell.role', { role: 'owner' })).toBe('Role: owner')
  await useLanguageForTest('de')
  expect(t('contacts.count', { count: 1 })).toBe('1 Kontakt')
  expect(t('contacts.count', { count: 1234 })).toBe('1.234 Kontakte')
  expect(t('nav.contacts')).toBe('Kontakte')
})

test('dates and numbers follow the locale set', () => {
  const at = '2026-11-27T23:41:00Z'
  setFormatLocale('de-DE')
  expect(formatNumber(1234567)).toBe('1.234.567')
  expect(formatPercent(0.256)).toBe('25,6\u00a0%')
  expect(formatDate(at)).toMatch(/27\.11\.2026/)
  setFormatLocale('en-US')
  expect(formatNumber(1234567)).toBe('1,234,567')
  expect(formatPercent(0.256)).toBe('25.6%')
  expect(formatDate(at)).toMatch(/Nov 2[78], 2026/)
  expect(formatDate(null)).toBe('—')
  setFormatLocale('not a locale!')
  expect(formatNumber(1000)).toBe('1,000')
})

/**
 * The pages whose every user-facing string comes from the catalogue: a text between JSX tags, a text
 * attribute (label, title, placeholder, aria-label, confirm, hint, data-label, alt) or a capitalised
 * literal in words ('Add domain') found in their source fails here. Names that are not words of a language
 * (mailctl, DKIM, CSV, an example address) are allowed.
 */
// An area (every file under web/pages/<area>/), one file of an area taken in on its own, or a file outside the pages (web/…).
const CATALOGUED = ['domains', 'tools', 'analytics', 'segments', 'mail', 'auth', 'projects', 'webhooks', 'workflows', 'web/editor/{editor,contact-preview,entry}.tsx', 'web/editor/{starters,catalogue}.ts',
  'web/components/html-editor.tsx', 'web/components/email-editor.tsx']
// web/editor/design.ts is left out: its literals are the email's CSS (font stacks such as 'Times New Roman'); its texts are the catalogue's ed.def.*.
const NOT_WORDS = new Set(['mailctl', 'example.com', 'DKIM', 'SPF', 'DMARC', 'MX', 'TXT', 'CSV', 'JSON', 'HTML', 'API', 'ID', 'URL', 'SMTP', 'HMAC', 'UTC', 'Acme'])

function untranslated(source: string): string[] {
  const found: string[] = []
  // An address, a domain or a path is an example, not a sentence.
  const example = (w: string) => NOT_WORDS.has(w) || /^(GET|POST|PUT|PATCH|DELETE)$/.test(w) || /^[a-z0-9]*[.-][a-z0-9.-]*$/.test(w) || /^[\w.+-]*@?[\w-]+(\.[\w-]+)+$|^\/|^https?:/.test(w) || !/[A-Za-z]{2,}/.test(w)
  const words = (s: string) => !example(s.trim()) && /[A-Za-zÄÖÜäöüß]{2,}/.test(s) && !s.split(/[\s,:;·()…]+/).filter(Boolean).every(example)
  // Comments are not shown; a generic's angle brackets (get<Domain[]>) are not tags; <code> holds code.
  let code = source.replace(/<(code|pre)\b[^>]*>[^<]*<\/(code|pre)>/g, '<code />').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '').replace(/\b\w+<[^<>()\n]+>\(/g, '(')
  // Nested type arguments (get<Page<Delivery>>): the innermost first, until none is left.
  for (let before = ''; before !== code;) { before = code; code = code.replace(/\b[A-Z]\w*<[^<>\n]*>/g, 'T').replace(/\b\w+<[^<>()\n]+>\(/g, '(') }
  for (const m of code.matchAll(/>([^<>{}]+)</g)) {
    const text = m[1].trim()
    if (text && words(text) && !/\b(return|export|interface|const|function)\b|\bif\s*\(|=>|&&|[;=]/.test(text)) found.push(`text: ${text}`)
  }
  for (const m of code.matchAll(/\b(label|title|placeholder|aria-label|confirm|hint|data-label|alt)="([^"]*)"/g)) {
    if (words(m[2])) found.push(`${m[1]}: ${m[2]}`)
  }
  for (const m of code.matchAll(/'([A-Z][a-z]+(?:[ …][^'\n]*)?)'/g)) {
    if (/\s|…/.test(m[1]) && words(m[1])) found.push(`literal: ${m[1]}`)
  }
  return found
}

test('the catalogued pages have no user-facing text outside the catalogue', async () => {
  const { Glob } = await import('bun')
  for (const area of CATALOGUED) {
    for await (const file of new Glob(area.startsWith('web/') ? area : area.includes('.') ? `web/pages/${area}` : `web/pages/${area}/**/*.{ts,tsx}`).scan('.')) {
      expect({ file, untranslated: untranslated(await Bun.file(file).text()) }).toEqual({ file, untranslated: [] })
    }
  }
})

test('the check finds text, attributes and literals in words, and lets keys and code through', () => {
  expect(untranslated(`<h2>Add a domain</h2><Field label="Domain" />{busy ? 'Adding…' : 'Add domain'}`)).toEqual([
    'text: Add a domain', 'label: Domain', 'literal: Adding…', 'literal: Add domain',
  ])
  expect(untranslated(`<h2>{t('domains.add')}</h2><Field label={t('x')} name="domain" placeholder="example.com" /><td>mailctl</td>
    const list = get<Domain[]>(\`/domains\`, id)\n<code>DKIM</code>`)).toEqual([])
})
