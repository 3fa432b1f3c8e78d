import { de } from '../../web/i18n/de'
import { en } from '../../web/i18n/en'
import { LANGUAGES } from '../../web/i18n'
import { NAV } from '../../web/nav'
import type { Boot } from './dashboard-boot'

/**
 * The contacts page's first view, drawn by the server into the page (docs/decisions.md, The
 * dashboard's first load). On Fast 3G the scripts arrive about two seconds after the page; this view shows
 * the first rows from the page's own HTML (with its stylesheet inline), the way the app draws them: the
 * same markup, the same catalogue (web/i18n), the same date format, language and theme. Its links are real
 * links; its controls are disabled until the app, rendered hidden beside it, takes its place
 * (web/first-view.ts). Every text from the data is HTML-escaped.
 */

export interface View {
  lang: 'en' | 'de'; locale: string; timeZone: string | undefined
  /** The theme in effect (null: the system's, by app.css's default) and the one chosen in the theme switch. */
  theme: 'light' | 'dark' | null; themeChoice: 'system' | 'light' | 'dark'
}

type Catalogue = typeof en
type Key = keyof Catalogue

/** Text for HTML content or a quoted attribute. */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
const esc = escapeHtml

function cookie(request: Request, name: string): string | null {
  for (const part of (request.headers.get('cookie') ?? '').split(/;\s*/)) {
    if (!part.startsWith(`${name}=`)) continue
    try { return decodeURIComponent(part.slice(name.length + 1)) } catch { return null }
  }
  return null
}

const validLocale = (tag: string | undefined): string | null => {
  if (!tag) return null
  try { return Intl.getCanonicalLocales(tag)[0] ?? null } catch { return null }
}
const validZone = (zone: string | undefined): string | undefined => {
  if (!zone) return undefined
  try { return new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone } catch { return undefined }
}

/**
 * The viewer's language, locale, time zone and theme as the app last kept them (web/first-view.ts's
 * cookies); without them, the first of the browser's languages the dashboard speaks (web/i18n's rule),
 * the server's time zone and the system's theme (app.css's default).
 */
export function viewOf(request: Request): View {
  const [lang, locale, zone] = (cookie(request, 'mailctl_view_lang') ?? '').split(' ')
  const [theme, choice] = (cookie(request, 'mailctl_view_theme') ?? '').split(' ')
  const themes = { theme: theme === 'light' || theme === 'dark' ? theme : null, themeChoice: choice === 'light' || choice === 'dark' ? choice : 'system' } as const
  if (lang === 'en' || lang === 'de') return { lang, locale: validLocale(locale) ?? (lang === 'de' ? 'de-DE' : 'en-US'), timeZone: validZone(zone), ...themes }
  const tags = (request.headers.get('accept-language') ?? '').split(',').map((p) => p.split(';')[0].trim()).filter(Boolean)
  for (const tag of tags) {
    const base = tag.toLowerCase().split('-')[0]
    if (base === 'en' || base === 'de') return { lang: base, locale: validLocale(tag) ?? base, timeZone: undefined, ...themes }
  }
  return { lang: 'en', locale: 'en-US', timeZone: undefined, ...themes }
}

function translator(lang: View['lang']) {
  const messages = (lang === 'de' ? de : en) as Record<Key, string | { one: string; other: string }>
  return (key: Key, vars?: Record<string, string>): string => {
    const m = messages[key] ?? en[key]
    const text = typeof m === 'string' ? m : m.other
    return vars ? text.replace(/\{(\w+)\}/g, (all, name: string) => vars[name] ?? all) : text
  }
}

/** The page's title, as the app sets it for the contacts page ("Contacts · Acme · mailctl"). */
export function firstViewTitle(boot: Boot, view: View): string | null {
  const project = boot.projects.find((p) => p.id === boot.contacts?.projectId)
  return project ? [translator(view.lang)('nav.contacts'), project.name, 'mailctl'].join(' · ') : null
}

/** The first view of the contacts page, or null when there is none to draw (no rows: the app draws the page). */
export function contactsFirstView(boot: Boot, view: View): string | null {
  const first = boot.contacts
  const project = boot.projects.find((p) => p.id === first?.projectId)
  if (!first || !project || first.page.data.length === 0) return null
  const t = translator(view.lang)
  const dates = new Intl.DateTimeFormat(view.locale, { dateStyle: 'medium', timeStyle: 'short', ...(view.timeZone ? { timeZone: view.timeZone } : {}) })
  const base = `/app/p/${encodeURIComponent(project.id)}`
  const manager = project.role === 'OWNER' || project.role === 'ADMIN'
  const nav = NAV.map((g) => {
    const links = g.links.filter((l) => !l.managers || manager)
    if (links.length === 0) return ''
    const items = links.map((l) => `<a href="${base}${l.path === '/' ? '' : l.path}"${l.path === '/contacts' ? ' aria-current="page"' : ''}>${esc(t(l.label))}</a>`).join('')
    return `<div class="nav-group">${g.group ? `<span class="nav-title">${esc(t(g.group))}</span>` : ''}${items}</div>`
  }).join('')
  const rows = first.page.data.map((c) => {
    const badge = c.subscribed ? `<span class="badge ok">${esc(t('contacts.subscribed'))}</span>` : `<span class="badge failed">${esc(t('contacts.unsubscribed'))}</span>`
    return `<tr><td class="pick"><input type="checkbox" disabled aria-label="${esc(t('contacts.selectOne', { email: c.email }))}"></td>`
      + `<td><a href="${base}/contacts/${encodeURIComponent(c.id)}">${esc(c.email)}</a></td><td>${badge}</td>`
      + `<td>${esc(dates.format(new Date(c.createdAt)))}</td></tr>`
  }).join('')
  return `<div class="shell" id="first-view">`
    + `<aside class="side"><a class="brand" href="/app/">mailctl</a>`
    + `<label for="first-view-project">${esc(t('shell.project'))}</label><select id="first-view-project" disabled><option>${esc(project.name)}</option></select>`
    + `<button type="button" class="menu-toggle secondary small" disabled>${esc(t('shell.menu'))}</button>`
    + `<nav aria-label="${esc(t('shell.sections'))}">${nav}</nav>`
    + `<div class="user"><span>${esc(boot.me.email)}<br>${esc(t('shell.role', { role: t(`role.${project.role}` as Key) }))}</span>`
    + `<a href="/app/invitations">${esc(t('shell.invitations'))}</a>`
    + `<span class="theme-switch"><label for="first-view-theme">${esc(t('theme.label'))}</label><select id="first-view-theme" disabled><option>${esc(t(`theme.${view.themeChoice}` as Key))}</option></select></span>`
    + `<span class="theme-switch"><label for="first-view-language">${esc(t('shell.language'))}</label><select id="first-view-language" disabled><option lang="${view.lang}">${esc(LANGUAGES.find((l) => l.id === view.lang)?.name ?? view.lang)}</option></select></span>`
    + `<button type="button" class="secondary small" disabled>${esc(t('shell.signOut'))}</button></div></aside>`
    + `<main><div><div class="head"><h1>${esc(t('contacts.title'))}</h1><div class="row">`
    + `<a class="button secondary" href="${base}/contacts/fields">${esc(t('contacts.fields'))}</a>`
    + `<button type="button" class="secondary" disabled>${esc(t('contacts.import'))}</button><button type="button" disabled>${esc(t('contacts.add'))}</button></div></div>`
    + `<div class="card"><search class="row">`
    + `<div class="field"><span class="label"><label for="first-view-search">${esc(t('contacts.search'))}</label></span><input id="first-view-search" type="search" disabled placeholder="${esc(t('contacts.searchPlaceholder'))}"></div>`
    + `<div class="field"><span><label for="first-view-sub">${esc(t('contacts.subscription'))}</label></span><select id="first-view-sub" disabled><option>${esc(t('ui.all'))}</option></select></div>`
    + `<button type="button" class="secondary" disabled>${esc(t('contacts.conditions'))}</button>`
    + `<details class="picker"><summary class="button secondary">${esc(t('contacts.columns'))}</summary></details>`
    + `<button type="button" class="secondary" disabled>${esc(t('ui.exportCsv'))}</button></search></div>`
    + `<div class="card"><p class="small muted">${esc(t('contacts.counting'))}</p><div class="table-wrap"><table><thead><tr>`
    + `<th scope="col" class="pick"><input type="checkbox" disabled aria-label="${esc(t('contacts.selectPage'))}"></th>`
    + `<th scope="col">${esc(t('contacts.email'))}</th><th scope="col">${esc(t('contacts.subscription'))}</th><th scope="col">${esc(t('contacts.created'))}</th>`
    + `</tr></thead><tbody>${rows}</tbody></table></div></div></div></main></div>`
}
