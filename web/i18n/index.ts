/**
 * The dashboard's message catalogue (every user-facing string in one catalogue, English and
 * German complete, the language chosen per user). `t('nav.contacts')` looks a key up in the catalogue of the
 * language in effect; `{name}` is replaced by `vars.name`, and a message with `one`/`other` forms is chosen
 * by `vars.count` (Intl.PluralRules), whose `{count}` is formatted in the viewer's locale. English is in the
 * first load; German is a chunk of its own, loaded before the first render when it is the language.
 *
 * The choice is kept in this browser per user (`mailctl.lang.<user id>`; there is no server-side place for
 * user preferences yet, docs/adr/0016-dashboard-bundles-and-editor.md), and `mailctl.lang` holds the last one for the pages before
 * sign-in. Without a choice the browser's language decides. A change reloads the page: every string and
 * every date is then rendered once in the new language, with no page left half translated.
 */
import { rememberView } from '../first-view'
import { formatNumber, setFormatLocale } from '../format'
import { en } from './en'
import type { editorEn } from './editor-en'

export type Catalogue = typeof en
/** A key of the dashboard's catalogue (en.ts, in the first load). */
export type PageKey = keyof Catalogue
/** A key of the email editor's part (editor-en.ts), which only the editor's bundle carries. */
export type EditorKey = keyof typeof editorEn
export type MessageKey = PageKey | EditorKey
export type Message = string | { one: string; other: string }
type Messages = Partial<Record<MessageKey, Message>>
export const LANGUAGES = [{ id: 'en', name: 'English' }, { id: 'de', name: 'Deutsch' }] as const
export type Lang = (typeof LANGUAGES)[number]['id']

const LAST = 'mailctl.lang'
const userKey = (userId: string) => `${LAST}.${userId}`
let lang: Lang = 'en'
let messages: Messages = en
/** English, the fallback of a message missing in the language (with the English of every part added). */
let english: Messages = en
/** The parts of the catalogue a bundle of its own added (addCatalogue), joined to each language's messages. */
const parts: Array<Record<Lang, Messages>> = []
const withParts = (l: Lang, page: Messages): Messages => (parts.length === 0 ? page : Object.assign({}, page, ...parts.map((p) => p[l])))

const isLang = (v: string | null | undefined): v is Lang => LANGUAGES.some((l) => l.id === v)
function stored(key: string): string | null {
  try { return localStorage.getItem(key) } catch { return null }
}
function browserLanguages(): readonly string[] {
  if (typeof navigator === 'undefined') return []
  const list = navigator.languages?.length ? navigator.languages : [navigator.language]
  return list.filter((l): l is string => typeof l === 'string' && l !== '')
}
/** The first of the browser's languages the dashboard speaks, else English. */
export function browserLang(): Lang {
  for (const tag of browserLanguages()) {
    const base = tag.toLowerCase().split('-')[0]
    if (isLang(base)) return base
  }
  return 'en'
}

/** The locale dates and numbers follow: the browser's own when it is of this language (en-GB, de-AT), else the language. */
export function localeFor(l: Lang): string {
  return browserLanguages().find((tag) => tag.toLowerCase().split('-')[0] === l) ?? (l === 'de' ? 'de-DE' : 'en-US')
}

/** Picks the language (the last user's choice on this browser, else the browser's) and loads its catalogue. */
export async function startLanguage(): Promise<void> {
  const last = stored(LAST)
  await use(isLang(last) ? last : browserLang())
}

async function use(l: Lang): Promise<void> {
  messages = withParts(l, l === 'de' ? (await import('./de')).de : en)
  lang = l
  if (typeof document !== 'undefined') document.documentElement.lang = l
  setFormatLocale(localeFor(l))
  rememberView('mailctl_view_lang', `${l} ${localeFor(l)} ${Intl.DateTimeFormat().resolvedOptions().timeZone}`)
}

export const currentLang = (): Lang => lang

/** Once the user is known: their own choice on this browser (else the browser's language), reloading if it differs. */
export function followUser(userId: string): void {
  const own = stored(userKey(userId))
  const want = isLang(own) ? own : browserLang()
  try { localStorage.setItem(LAST, want) } catch { /* private mode: the browser's language stays */ }
  if (want !== lang) location.reload()
}

/** The user picks a language: kept for them on this browser, and the page is drawn again in it. */
export function chooseLanguage(userId: string, l: Lang): void {
  try {
    localStorage.setItem(userKey(userId), l)
    localStorage.setItem(LAST, l)
  } catch { /* private mode: the choice lasts until the page is closed */ }
  if (l !== lang) {
    // Without storage the reload would come back in the old language: switch in place then.
    if (stored(LAST) === l) location.reload()
    else void use(l)
  }
}

/** The message of `key` in the language in effect, with `{name}` replaced and the plural form chosen by `count`. */
export function t(key: MessageKey, vars?: Record<string, string | number>): string {
  const m = messages[key] ?? english[key]
  // A key built at run time from an unexpected value (a status the dashboard does not know yet) shows itself.
  if (m === undefined) return String(key).split('.').pop() ?? String(key)
  const text = typeof m === 'string' ? m : m[new Intl.PluralRules(lang).select(Number(vars?.count ?? 0)) === 'one' ? 'one' : 'other']
  if (!vars) return text
  return text.replace(/\{(\w+)\}/g, (all, name: string) => {
    const v = vars[name]
    if (v === undefined) return all
    return typeof v === 'number' ? formatNumber(v, 2) : v
  })
}

/** The language in effect and its catalogue: handed to a bundle of its own (the email editor) so it speaks the page's language. */
export function languageNow(): { lang: Lang; messages: Messages } {
  return { lang, messages }
}

/** Takes the page's language and catalogue (its `languageNow`) in a bundle of its own: no load, no reload, and dates follow. */
export function adoptLanguage(given: { lang: Lang; messages: Messages }): void {
  messages = withParts(given.lang, given.messages)
  lang = given.lang
  setFormatLocale(localeFor(given.lang))
}

/**
 * A part of the catalogue that a bundle of its own carries (the email editor's, editor-en.ts and
 * editor-de.ts): its messages join those of every language, now and after a change.
 */
export function addCatalogue(part: Record<Lang, Messages>): void {
  parts.push(part)
  english = { ...english, ...part.en }
  messages = { ...messages, ...part[lang] }
}

/** For tests: the language and catalogue in effect, set without storage. */
export async function useLanguageForTest(l: Lang): Promise<void> {
  await use(l)
}
