import type { PageKey } from './i18n'

export interface NavLink { path: string; label: PageKey; managers?: boolean }

/**
 * The sections, grouped as a marketer looks for them; on a phone the list folds behind a Menu button.
 * web/main.tsx draws them; the server draws them too in a page's first view (src/http/dashboard-first-view.ts).
 */
export const NAV: Array<{ group: PageKey | null; links: NavLink[] }> = [
  { group: null, links: [{ path: '/', label: 'nav.overview' }] },
  { group: 'nav.audience', links: [{ path: '/contacts', label: 'nav.contacts' }, { path: '/segments', label: 'nav.segments' }] },
  {
    group: 'nav.messages',
    links: [{ path: '/campaigns', label: 'nav.campaigns' }, { path: '/workflows', label: 'nav.workflows' }, { path: '/templates', label: 'nav.templates' }],
  },
  {
    group: 'nav.delivery',
    links: [{ path: '/activity', label: 'nav.activity' }, { path: '/suppressions', label: 'nav.suppressions' }, { path: '/domains', label: 'nav.domains' }],
  },
  {
    group: 'nav.reports',
    links: [{ path: '/analytics', label: 'nav.analytics' }, { path: '/security', label: 'nav.security' }, { path: '/usage', label: 'nav.usage' }],
  },
  {
    group: 'nav.project',
    links: [
      { path: '/settings', label: 'nav.settings', managers: true }, { path: '/keys', label: 'nav.keys', managers: true },
      { path: '/webhooks', label: 'nav.webhooks' }, { path: '/members', label: 'nav.members' }, { path: '/tools', label: 'nav.tools' },
    ],
  },
]


/**
 * The contacts page's address and its page size: web/main.tsx starts its first page early, and the server
 * inlines that page for a signed-in user (src/http/dashboard-boot.ts) under the same query key, so both
 * must ask for the same rows.
 */
export const CONTACTS_PAGE_PATH = /^\/app\/p\/([^/]+)\/contacts\/?$/
export const CONTACTS_PAGE_SIZE = 50
