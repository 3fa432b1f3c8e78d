import { useQueries } from '@tanstack/react-query'
import { post, type Project } from '../../api'
import type { AudienceCount, Campaign, FilterTree } from './types'
import { t } from '../../i18n'

/**
 * Checks before a campaign goes out, shown above "Send now" and "Schedule": the
 * recipients who would get an empty value for a variable without a fallback (counted by the API over the
 * campaign's audience), links that are not absolute http(s) URLs, images without alt text, a subject
 * empty or over 78 characters, and a missing preheader. They warn; sending still works once confirmed.
 */

export interface Check { id: string; text: string }

/** Variables the message itself provides: never empty. */
const BUILT_INS = new Set(['email', 'id', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl'])
const HELPERS = new Set(['if', 'unless', 'each', 'with', 'lookup', 'else', 'this'])

/** Contact-data variables used without a fallback: `{{firstName}}` yes, `{{ firstName | default: "x" }}` no. */
export function variablesWithoutFallback(...sources: string[]): string[] {
  const out = new Set<string>()
  for (const src of sources) {
    for (const m of src.matchAll(/\{\{\{?\s*([A-Za-z_][\w-]*)((?:\.[\w-]+)*)\s*(\|\s*default:)?[^}]*\}?\}\}/g)) {
      if (m[3] || BUILT_INS.has(m[1]) || HELPERS.has(m[1])) continue
      out.add(m[1])
    }
  }
  return [...out].sort()
}

/** The checks that read the content only (links, images, subject, preheader). */
export function contentChecks(c: Pick<Campaign, 'subject' | 'body' | 'preheader'>): Check[] {
  const out: Check[] = []
  const doc = new DOMParser().parseFromString(c.body, 'text/html')
  const bad = new Set<string>()
  for (const a of doc.querySelectorAll('a[href]')) {
    const href = (a.getAttribute('href') ?? '').trim()
    if (/^https?:\/\/[^\s/]+/i.test(href) || href.startsWith('{{') || /^(mailto|tel):/i.test(href)) continue
    bad.add(href || '(empty)')
  }
  if (bad.size) out.push({ id: 'links', text: t('checks.links', { count: bad.size, list: [...bad].slice(0, 5).join(', ') }) })
  const noAlt = [...doc.querySelectorAll('img')].filter((i) => !(i.getAttribute('alt') ?? '').trim()).length
  if (noAlt) out.push({ id: 'alt', text: t('checks.alt', { count: noAlt }) })
  if (!c.subject.trim()) out.push({ id: 'subject', text: t('checks.subjectEmpty') })
  else if (c.subject.length > 78) out.push({ id: 'subject', text: t('checks.subjectLong', { count: c.subject.length }) })
  if (!c.preheader?.trim()) out.push({ id: 'preheader', text: t('checks.preheader') })
  return out
}

/** The campaign's audience as a filter group, to be combined with another condition. */
function audienceGroups(c: Campaign): FilterTree['groups'] {
  if (c.audienceType === 'SEGMENT' && c.segmentId) return [{ filters: [{ field: `segment.${c.segmentId}`, operator: 'memberOfSegment' }] }]
  if (c.audienceType === 'FILTERED' && c.audienceCondition) return [{ conditions: c.audienceCondition }]
  return []
}

/** Every check of a campaign: the content's, and per variable without a fallback the recipients lacking it. */
export function usePreSendChecks(project: Project, c: Campaign): { checks: Check[]; pending: boolean } {
  const vars = variablesWithoutFallback(c.subject, c.body)
  const counts = useQueries({
    queries: vars.map((v) => ({
      queryKey: ['campaign-missing', project.id, c.id, c.updatedAt, v],
      queryFn: () => post<AudienceCount>('/campaigns/audience/count', {
        type: c.type, audienceType: 'FILTERED',
        audienceCondition: { logic: 'AND', groups: [...audienceGroups(c), { filters: [{ field: `data.${v}`, operator: 'notExists' }] }] },
      }, project.id),
    })),
  })
  const checks = contentChecks(c)
  vars.forEach((v, i) => {
    const n = counts[i].data?.recipients
    if (n) checks.unshift({ id: `var-${v}`, text: t('checks.empty', { count: n, tag: `{{${v}}}`, fallback: `{{ ${v} | default: "…" }}` }) })
  })
  return { checks, pending: counts.some((q) => q.isPending) }
}

export function PreSendChecks({ checks, pending }: { checks: Check[]; pending: boolean }) {
  if (!checks.length) return <p className="small muted" role="status">{pending ? t('checks.checking') : t('checks.passed')}</p>
  return (
    <div className="alert warn" role="status" data-testid="pre-send-checks">
      <strong>{t('checks.before')}</strong>
      <ul>{checks.map((k) => <li key={k.id}>{k.text}</li>)}</ul>
      <span className="small">{t('checks.canSend')}</span>
    </div>
  )
}
