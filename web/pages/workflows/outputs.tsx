import type { ReactNode } from 'react'
import { Link } from 'wouter'
import { formatDate } from '../../components/ui'
import type { StepExecution } from './graph'

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

function data(o: Record<string, unknown>): ReactNode {
  const entries = Object.entries(o)
  if (entries.length === 0) return null
  return entries.map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join(', ')
}

export function StepOutput({ run }: { run: StepExecution }) {
  const o = run.output ?? {}
  if (run.error) return <span className="err">{run.error}</span>
  switch (run.stepType) {
    case 'TRIGGER':
      return <span>{o.manual ? 'Started by a test run' : 'Started by its trigger event'}</span>
    case 'SEND_EMAIL':
      if (o.skipped) return <span>Not sent to {str(o.to)}: {o.skipped === 'unsubscribed' ? 'the contact is unsubscribed (marketing email)' : 'the address is on the suppression list'}</span>
      if (o.emailId) return <span>Email sent to {str(o.to)}. <Link href={`/emails/${str(o.emailId)}`}>Open the email</Link></span>
      break
    case 'DELAY':
      if (run.status === 'COMPLETED') return <span>Waited until {formatDate(str(o.dueAt))}{typeof o.lateMs === 'number' && o.lateMs > 60_000 ? `, went on at ${formatDate(str(o.ranAt))}` : ''}</span>
      return <span>Waiting until {formatDate(str(o.dueAt ?? run.dueAt))}</span>
    case 'WAIT_FOR_EVENT':
      if (o.timedOut) return <span>No event in time: went the “timeout” way at {formatDate(str(o.timeoutAt))}</span>
      if (o.eventId) {
        const d = o.eventData && typeof o.eventData === 'object' ? data(o.eventData as Record<string, unknown>) : null
        return <span>“{str(o.eventName)}” happened: went the “event” way{d ? ` (${d})` : ''}</span>
      }
      return <span>Waiting for “{str(o.eventName)}”{o.timeoutAt ? ` until ${formatDate(str(o.timeoutAt))}` : ', with no time limit'}</span>
    case 'CONDITION':
      if (typeof o.result === 'boolean') return <span>{o.result ? 'Yes: the contact matched, went the “yes” way' : 'No: the contact did not match, went the “no” way'}</span>
      break
    case 'WEBHOOK': {
      const req = (o.request ?? {}) as Record<string, unknown>
      const res = o.response as Record<string, unknown> | undefined
      return (
        <span>
          {str(req.method)} {str(req.url)}{res ? <> answered <strong>HTTP {str(res.status)}</strong></> : ''}
          {res?.body ? <details className="wf-more"><summary>Answer</summary><pre className="code">{str(res.body)}</pre></details> : null}
        </span>
      )
    }
    case 'UPDATE_CONTACT': {
      const parts: string[] = []
      if (o.subscriptionChanged) parts.push(o.subscribed ? 'subscribed the contact' : 'unsubscribed the contact')
      const d = o.data && typeof o.data === 'object' ? data(o.data as Record<string, unknown>) : null
      return <span>{parts.length ? `${parts.join(', ')[0].toUpperCase()}${parts.join(', ').slice(1)}. ` : ''}{d ? `The contact’s data is now: ${d}` : 'Contact updated'}</span>
    }
    case 'EXIT':
      return <span>Ended{o.reason ? `: ${str(o.reason)}` : ''}</span>
  }
  return <Pairs o={o} />
}
