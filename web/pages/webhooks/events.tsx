import { useQuery } from '@tanstack/react-query'
import { useId, useState } from 'react'
import { get, type Project } from '../../api'
import { FormField } from '../../components/ui'
import { currentLang, type MessageKey, t } from '../../i18n'

/**
 * Choosing the events an endpoint receives (`eventTypes` of /webhooks/endpoints): every event, or some, by
 * their names in words. A family's pattern (`email.*`) stands for each of its events; the project's own
 * tracked events come from /events/names, and a name not seen yet can be typed.
 */

interface Choice { type: string; label: MessageKey }
interface Family { title: MessageKey; one: MessageKey; all: Choice; events: Choice[] }

const ev = (type: string): Choice => ({ type, label: `whe.${type}` as MessageKey })
export const FAMILIES: Family[] = [
  {
    title: 'whe.emails', one: 'whe.email',
    all: { type: 'email.*', label: 'whe.allEmail' },
    events: ['email.sent', 'email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.failed', 'email.deferred', 'email.delayed', 'email.received'].map(ev),
  },
  { title: 'whe.contacts', one: 'whe.contact', all: { type: 'contact.*', label: 'whe.allContact' }, events: ['contact.subscribed', 'contact.unsubscribed'].map(ev) },
  { title: 'whe.segments', one: 'whe.segments', all: { type: 'segment.*', label: 'whe.allSegment' }, events: [] },
]

/** An event's name in words, in the language in effect ("Email: opened"). */
function eventLabel(type: string): string | undefined {
  for (const f of FAMILIES) {
    if (f.all.type === type) return t(f.all.label)
    const e = f.events.find((x) => x.type === type)
    if (e) return `${t(f.one)}: ${lowerWord(t(e.label))}`
  }
  return undefined
}
/** English lowers the event's word inside the phrase; German keeps its nouns' capitals. */
const lowerWord = (s: string) => (currentLang() === 'en' ? s.toLowerCase() : s)

/** The events of an endpoint in words: "Every event", or the chosen ones. */
export function eventsText(types: string[]): string {
  if (types.includes('*')) return t('whe.every')
  return types.map((x) => eventLabel(x) ?? (/^segment\.(.+)\.(entry|exit)$/.exec(x)
    ? t('whe.segmentEvent', { slug: x.split('.')[1], what: x.endsWith('.entry') ? t('whe.entry') : t('whe.exit') })
    : t('whe.quoted', { name: x }))).join(', ')
}

interface EventName { name: string; count: number; reserved: boolean }

export function EventChoice({ project, value, onChange, error }: {
  project: Project; value: string[]; onChange: (v: string[]) => void; error?: string
}) {
  const id = useId()
  const [other, setOther] = useState('')
  const names = useQuery({ queryKey: ['event-names', project.id], queryFn: () => get<{ data: EventName[] }>('/events/names', project.id), staleTime: 60_000 })
  const every = value.includes('*')
  const has = (x: string) => value.includes(x)
  const toggle = (x: string, on: boolean) => onChange(on ? [...value.filter((v) => v !== '*'), x] : value.filter((v) => v !== x))
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
      <legend>{t('whe.toSend')}</legend>
      <div className="check">
        <input type="radio" id={`${id}-all`} name={`${id}-mode`} checked={every} onChange={() => onChange(['*'])} />
        <label htmlFor={`${id}-all`}>{t('whe.everyOfProject')}</label>
      </div>
      <div className="check">
        <input type="radio" id={`${id}-some`} name={`${id}-mode`} checked={!every} onChange={() => onChange(value.filter((v) => v !== '*'))} />
        <label htmlFor={`${id}-some`}>{t('whe.onlyChosen')}</label>
      </div>
      {!every && (
        <div className="wh-families">
          {FAMILIES.map((f) => {
            const all = has(f.all.type)
            return (
              <fieldset key={f.title} className="plain">
                <legend>{t(f.title)}</legend>
                <Check id={`${id}-${f.all.type}`} label={t(f.all.label)} checked={all} onChange={(on) => onChange(on ? [...value.filter((v) => !v.startsWith(f.all.type.slice(0, -1))), f.all.type] : value.filter((v) => v !== f.all.type))} />
                {f.events.map((e) => (
                  <Check key={e.type} id={`${id}-${e.type}`} label={t(e.label)} checked={all || has(e.type)} disabled={all} onChange={(on) => toggle(e.type, on)} />
                ))}
              </fieldset>
            )
          })}
          <fieldset className="plain">
            <legend>{t('whe.tracked')}</legend>
            {tracked.length === 0 && custom.length === 0 && <p className="small muted">{t('whe.noneTracked')}</p>}
            {[...tracked, ...custom].map((n) => <Check key={n} id={`${id}-t-${n}`} label={n} checked={has(n)} onChange={(on) => toggle(n, on)} />)}
            <div className="row">
              <FormField label={t('whe.another')} id={`${id}-other`}>
                {(c) => (
                  <input {...c} value={other} onChange={(e) => setOther(e.target.value)} placeholder={t('whe.placeholder')}
                    onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); add() } }} />
                )}
              </FormField>
              <button type="button" className="secondary" onClick={add} disabled={!other.trim()}>{t('whe.add')}</button>
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
