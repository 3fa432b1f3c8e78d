import { Link } from 'wouter'
import { formatDate } from '../../components/ui'
import type { StepExecution } from './graph'
import { t } from '../../i18n'

/**
 * A step's output in words: what the run did at the step, not its JSON. The outputs are
 * those of src/modules/workflows/steps and engine.ts; a key this page does not know is listed by name.
 */

const str = (v: unknown) => (typeof v === 'string' ? v : v === null || v === undefined ? '' : JSON.stringify(v))

/** Any other object as "name: value" lines (the last resort, still not one line of JSON). */
function Pairs({ o }: { o: Record<string, unknown> }) {
  const entries = Object.entries(o)
  if (entries.length === 0) return <span className="muted">—</span>
  return <dl className="wf-pairs">{entries.map(([k, v]) => <div key={k}><dt>{k}</dt><dd>{typeof v === 'object' && v !== null ? <Pairs o={v as Record<string, unknown>} /> : str(v)}</dd></div>)}</dl>
}

function data(o: Record<string, unknown>): string | null {
  const entries = Object.entries(o)
  if (entries.length === 0) return null
  return entries.map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join(', ')
}

export function StepOutput({ run }: { run: StepExecution }) {
  const o = run.output ?? {}
  if (run.error) return <span className="err">{run.error}</span>
  switch (run.stepType) {
    case 'TRIGGER':
      return <span>{o.manual ? t('wfo.byTest') : t('wfo.byTrigger')}</span>
    case 'SEND_EMAIL':
      if (o.skipped) return <span>{o.skipped === 'unsubscribed' ? t('wfo.notSentUnsub', { to: str(o.to) }) : t('wfo.notSentSuppressed', { to: str(o.to) })}</span>
      if (o.emailId) return <span>{t('wfo.sent', { to: str(o.to) })} <Link href={`/emails/${str(o.emailId)}`}>{t('wfo.openEmail')}</Link></span>
      break
    case 'DELAY':
      if (run.status === 'COMPLETED') return <span>{typeof o.lateMs === 'number' && o.lateMs > 60_000 ? t('wfo.waitedLate', { due: formatDate(str(o.dueAt)), ran: formatDate(str(o.ranAt)) }) : t('wfo.waited', { due: formatDate(str(o.dueAt)) })}</span>
      return <span>{t('wfo.waitingUntil', { due: formatDate(str(o.dueAt ?? run.dueAt)) })}</span>
    case 'WAIT_FOR_EVENT':
      if (o.timedOut) return <span>{t('wfo.timedOut', { at: formatDate(str(o.timeoutAt)) })}</span>
      if (o.eventId) {
        const d = o.eventData && typeof o.eventData === 'object' ? data(o.eventData as Record<string, unknown>) : null
        return <span>{d ? t('wfo.happenedData', { event: str(o.eventName), data: d }) : t('wfo.happened', { event: str(o.eventName) })}</span>
      }
      return <span>{o.timeoutAt ? t('wfo.waitingForUntil', { event: str(o.eventName), until: formatDate(str(o.timeoutAt)) }) : t('wfo.waitingFor', { event: str(o.eventName) })}</span>
    case 'CONDITION':
      if (typeof o.result === 'boolean') return <span>{o.result ? t('wfo.yes') : t('wfo.no')}</span>
      break
    case 'WEBHOOK': {
      const req = (o.request ?? {}) as Record<string, unknown>
      const res = o.response as Record<string, unknown> | undefined
      return (
        <span>
          {str(req.method)} {str(req.url)}{res ? <> {t('wfo.answered')} <strong>HTTP {str(res.status)}</strong></> : ''}
          {res?.body ? <details className="wf-more"><summary>{t('wfo.answer')}</summary><pre className="code">{str(res.body)}</pre></details> : null}
        </span>
      )
    }
    case 'UPDATE_CONTACT': {
      const parts: string[] = []
      if (o.subscriptionChanged) parts.push(o.subscribed ? t('wfo.subscribed') : t('wfo.unsubscribed'))
      const d = o.data && typeof o.data === 'object' ? data(o.data as Record<string, unknown>) : null
      return <span>{parts.length ? `${parts.join(', ')[0].toUpperCase()}${parts.join(', ').slice(1)}. ` : ''}{d ? t('wfo.dataNow', { data: d }) : t('wfo.updated')}</span>
    }
    case 'EXIT':
      return <span>{o.reason ? t('wfo.endedBecause', { reason: str(o.reason) }) : t('wfo.ended')}</span>
  }
  return <Pairs o={o} />
}
