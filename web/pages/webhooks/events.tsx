import { useQuery } from '@tanstack/react-query'
import { useId, useState } from 'react'
import { get, type Project } from '../../api'

/**
 * Choosing the events an endpoint receives (`eventTypes` of /webhooks/endpoints): every event, or some, by
 * their names in words. A family's pattern (`email.*`) stands for each of its events; the project's own
 * tracked events come from /events/names, and a name not seen yet can be typed.
 */

interface Choice { type: string; label: string }
interface Family { title: string; all: Choice; events: Choice[] }

export const FAMILIES: Family[] = [
  {
    title: 'Emails',
    all: { type: 'email.*', label: 'Every email event' },
    events: [
      { type: 'email.sent', label: 'Sent' }, { type: 'email.delivery', label: 'Delivered' },
      { type: 'email.open', label: 'Opened' }, { type: 'email.click', label: 'Link clicked' },
      { type: 'email.bounce', label: 'Bounced' }, { type: 'email.complaint', label: 'Marked as spam' },
      { type: 'email.failed', label: 'Failed' }, { type: 'email.deferred', label: 'Deferred (will be retried)' },
      { type: 'email.delayed', label: 'Delayed (reported by the receiver)' }, { type: 'email.received', label: 'Reply received' },
    ],
  },
  {
    title: 'Contacts',
    all: { type: 'contact.*', label: 'Every contact event' },
    events: [{ type: 'contact.subscribed', label: 'Subscribed' }, { type: 'contact.unsubscribed', label: 'Unsubscribed' }],
  },
  { title: 'Segments', all: { type: 'segment.*', label: 'A contact enters or leaves any segment' }, events: [] },
]

const LABELS = new Map(FAMILIES.flatMap((f) => [[f.all.type, f.all.label], ...f.events.map((e): [string, string] => [e.type, `${f.title.replace(/s$/, '')}: ${e.label.toLowerCase()}`])]))

/** The events of an endpoint in words: "Every event", or the chosen ones. */
export function eventsText(types: string[]): string {
  if (types.includes('*')) return 'Every event'
  return types.map((t) => LABELS.get(t) ?? (/^segment\.(.+)\.(entry|exit)$/.exec(t) ? `Segment “${t.split('.')[1]}”: ${t.endsWith('.entry') ? 'entry' : 'exit'}` : `“${t}”`)).join(', ')
}

interface EventName { name: string; count: number; reserved: boolean }

export function EventChoice({ project, value, onChange, error }: {
  project: Project; value: string[]; onChange: (v: string[]) => void; error?: string
}) {
  const id = useId()
  const [other, setOther] = useState('')
  const names = useQuery({ queryKey: ['event-names', project.id], queryFn: () => get<{ data: EventName[] }>('/events/names', project.id), staleTime: 60_000 })
  const every = value.includes('*')
  const has = (t: string) => value.includes(t)
  const toggle = (t: string, on: boolean) => onChange(on ? [...value.filter((v) => v !== '*'), t] : value.filter((v) => v !== t))
  const known = new Set(FAMILIES.flatMap((f) => [f.all.type, ...f.events.map((e) => e.type)]))
  const tracked = (names.data?.data ?? []).filter((n) => !n.reserved).map((n) => n.name)
  const custom = value.filter((v) => v !== '*' && !known.has(v) && !tracked.includes(v))
  const add = () => {
    const n = other.trim()
    if (n && !value.includes(n)) onChange([...value.filter((v) => v !== '*'), n])
    setOther('')
  }
  return (
    <fieldset className="choice wh-events" aria-describedby={error ? `${id}-err` : undefined}>
      <legend>Events to send</legend>
      <div className="check">
        <input type="radio" id={`${id}-all`} name={`${id}-mode`} checked={every} onChange={() => onChange(['*'])} />
        <label htmlFor={`${id}-all`}>Every event of the project</label>
      </div>
      <div className="check">
        <input type="radio" id={`${id}-some`} name={`${id}-mode`} checked={!every} onChange={() => onChange(value.filter((v) => v !== '*'))} />
        <label htmlFor={`${id}-some`}>Only the events chosen below</label>
      </div>
      {!every && (
        <div className="wh-families">
          {FAMILIES.map((f) => {
            const all = has(f.all.type)
            return (
              <fieldset key={f.title} className="plain">
                <legend>{f.title}</legend>
                <Check id={`${id}-${f.all.type}`} label={f.all.label} checked={all} onChange={(on) => onChange(on ? [...value.filter((v) => !v.startsWith(f.all.type.slice(0, -1))), f.all.type] : value.filter((v) => v !== f.all.type))} />
                {f.events.map((e) => (
                  <Check key={e.type} id={`${id}-${e.type}`} label={e.label} checked={all || has(e.type)} disabled={all} onChange={(on) => toggle(e.type, on)} />
                ))}
              </fieldset>
            )
          })}
          <fieldset className="plain">
            <legend>Your tracked events</legend>
            {tracked.length === 0 && custom.length === 0 && <p className="small muted">None tracked yet. Type an event name below to add it.</p>}
            {[...tracked, ...custom].map((n) => <Check key={n} id={`${id}-t-${n}`} label={n} checked={has(n)} onChange={(on) => toggle(n, on)} />)}
            <div className="row">
              <div className="field">
                <span><label htmlFor={`${id}-other`}>Another event name</label></span>
                <input id={`${id}-other`} value={other} onChange={(e) => setOther(e.target.value)} placeholder="purchase"
                  onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); add() } }} />
              </div>
              <button type="button" className="secondary" onClick={add} disabled={!other.trim()}>Add</button>
            </div>
          </fieldset>
        </div>
      )}
      {error && <span id={`${id}-err`} className="err">{error}</span>}
    </fieldset>
  )
}

function Check({ id, label, checked, disabled, onChange }: { id: string; label: string; checked: boolean; disabled?: boolean; onChange: (on: boolean) => void }) {
  return (
    <div className="check">
      <input type="checkbox" id={id} checked={checked} disabled={disabled} onChange={(e) => onChange(e.target.checked)} />
      <label htmlFor={id}>{label}</label>
    </div>
  )
}
