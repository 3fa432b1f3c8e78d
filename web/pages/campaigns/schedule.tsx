import { type FormEvent, useId, useMemo, useState } from 'react'
import { FormField } from '../../components/ui'
import { formatDateLong, formatDay } from '../../format'
import { t } from '../../i18n'

/** Scheduling in a chosen time zone: a wall-clock date and time there, sent to the API as a UTC instant. */

/** The zone's offset from UTC (ms) at the instant `utcMs`. */
function offsetAt(utcMs: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
  }).formatToParts(new Date(utcMs))
  const n = (t: string) => Number(parts.find((p) => p.type === t)?.value ?? 0)
  return Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute'), n('second')) - Math.floor(utcMs / 1000) * 1000
}

/** The UTC instant of a wall-clock `date` (YYYY-MM-DD) and `time` (HH:mm) in `timeZone`; null when unparseable. */
export function zonedToUtc(date: string, time: string, timeZone: string): Date | null {
  const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date)
  const t = /^(\d{2}):(\d{2})$/.exec(time)
  if (!d || !t) return null
  const wall = Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3]), Number(t[1]), Number(t[2]))
  // Twice: the offset at the first guess can differ from the one at the answer across a DST change.
  let utc = wall - offsetAt(wall, timeZone)
  utc = wall - offsetAt(utc, timeZone)
  return new Date(utc)
}

export function localZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'
}

function zones(): string[] {
  const all = (Intl as unknown as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf?.('timeZone') ?? []
  const list = all.length ? all : ['UTC']
  const here = localZone()
  return list.includes(here) ? list : [here, ...list]
}

const pad = (n: number) => String(n).padStart(2, '0')

/** The form: date, time and time zone; refuses a time that is not in the future (the API would send at once). */
export function ScheduleForm({ onSchedule, busy, error }: { onSchedule: (at: Date) => void; busy: boolean; error?: string }) {
  const id = useId()
  const tomorrow = new Date(Date.now() + 86_400_000)
  const [date, setDate] = useState(`${tomorrow.getFullYear()}-${pad(tomorrow.getMonth() + 1)}-${pad(tomorrow.getDate())}`)
  const [time, setTime] = useState('09:00')
  const [zone, setZone] = useState(localZone())
  const [problem, setProblem] = useState<string | null>(null)
  const options = useMemo(zones, [])
  const at = zonedToUtc(date, time, zone)
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (!at) { setProblem(t('schedule.enter')); return }
    if (at.getTime() <= Date.now() + 60_000) { setProblem(t('schedule.future')); return }
    setProblem(null)
    onSchedule(at)
  }
  const msg = problem ?? error
  return (
    <form onSubmit={submit} noValidate aria-label={t('schedule.label')}>
      <div className="row">
        <FormField label={t('schedule.date')} id={`${id}-date`} invalid={!!msg} describedBy={msg ? `${id}-err` : undefined}>
          {(c) => <input {...c} type="date" value={date} onChange={(e) => setDate(e.target.value)} />}
        </FormField>
        <FormField label={t('schedule.time')} id={`${id}-time`} invalid={!!msg} describedBy={msg ? `${id}-err` : undefined}>
          {(c) => <input {...c} type="time" value={time} onChange={(e) => setTime(e.target.value)} />}
        </FormField>
        <FormField label={t('schedule.zone')} id={`${id}-zone`}>
          {(c) => (
            <select {...c} value={zone} onChange={(e) => setZone(e.target.value)}>
              {options.map((z) => <option key={z} value={z}>{z.replace(/_/g, ' ')}</option>)}
            </select>
          )}
        </FormField>
        <button type="submit" disabled={busy}>{t('schedule.label')}</button>
      </div>
      {msg && <p id={`${id}-err`} className="err" role="alert">{msg}</p>}
      {at && !msg && <p className="small muted">{t('schedule.thatIs', { at: formatDateLong(at), zone: localZone() })}</p>}
    </form>
  )
}

/**
 * A send at one local time in each recipient's time zone: the contact's `timezone` field, or
 * the fallback zone for contacts without one (or with a name that is not a time zone).
 */
export function LocalTimeForm({ onSend, busy }: { onSend: (at: { date: string; localTime: string; fallbackTimeZone: string }) => void; busy: boolean }) {
  const id = useId()
  const tomorrow = new Date(Date.now() + 86_400_000)
  const [date, setDate] = useState(`${tomorrow.getFullYear()}-${pad(tomorrow.getMonth() + 1)}-${pad(tomorrow.getDate())}`)
  const [time, setTime] = useState('09:00')
  const [zone, setZone] = useState(localZone())
  const [problem, setProblem] = useState<string | null>(null)
  const options = useMemo(zones, [])
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || !/^\d{2}:\d{2}$/.test(time)) { setProblem(t('schedule.enter')); return }
    setProblem(null)
    onSend({ date, localTime: time, fallbackTimeZone: zone })
  }
  return (
    <form onSubmit={submit} noValidate aria-label={t('schedule.localLabel')}>
      <div className="row">
        <FormField label={t('schedule.localDate')} id={`${id}-date`} invalid={!!problem} describedBy={problem ? `${id}-err` : undefined}>
          {(c) => <input {...c} type="date" value={date} onChange={(e) => setDate(e.target.value)} />}
        </FormField>
        <FormField label={t('schedule.localTime')} id={`${id}-time`} invalid={!!problem} describedBy={problem ? `${id}-err` : undefined}>
          {(c) => <input {...c} type="time" value={time} onChange={(e) => setTime(e.target.value)} />}
        </FormField>
        <FormField label={t('schedule.fallbackZone')} id={`${id}-zone`}>
          {(c) => (
            <select {...c} value={zone} onChange={(e) => setZone(e.target.value)}>
              {options.map((z) => <option key={z} value={z}>{z.replace(/_/g, ' ')}</option>)}
            </select>
          )}
        </FormField>
        <button type="submit" disabled={busy}>{t('schedule.sendLocal')}</button>
      </div>
      {problem && <p id={`${id}-err`} className="err" role="alert">{problem}</p>}
      <p className="small muted">{t('schedule.localText1', { time: time || t('schedule.thatTime'), date: date ? formatDay(`${date}T12:00:00Z`, 'UTC') : t('schedule.thatDay') })}<code>timezone</code>{t('schedule.localText2', { zone: zone.replace(/_/g, ' ') })}</p>
    </form>
  )
}
