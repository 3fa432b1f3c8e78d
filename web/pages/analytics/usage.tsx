import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { call, canManage, get, type Project } from '../../api'
import { ErrorBox, Field, fieldError, Loading, PageHead } from '../../components/ui'
import { Meter } from './meter'
import { CATEGORIES, categoryLabel, type Consumption, type Limits, num } from './data'
import { t } from '../../i18n'
import { formatDay, formatMonth } from '../../format'

const monthOf = (iso: string) => formatMonth(iso)

/**
 * Usage against the monthly caps (docs/decisions.md, Usage caps): what each category used this calendar
 * month (UTC) against its cap, and for OWNER and ADMIN the caps' form (PUT billing-limits), with the API's
 * errors on the fields. A MEMBER sees the same figures, read-only.
 */
export function UsagePage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const key = ['billing-consumption', project.id]
  const usage = useQuery({ queryKey: key, queryFn: () => get<Consumption>(`/users/@me/projects/${project.id}/billing-consumption`) })
  const [formKey, setFormKey] = useState(0)
  const save = useMutation({
    mutationFn: (body: Limits) => call<Limits>('PUT', `/users/@me/projects/${project.id}/billing-limits`, { body }),
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: key }); setFormKey((k) => k + 1) },
  })
  const manage = canManage(project.role)
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const f = new FormData(e.currentTarget)
    const body = {} as Limits
    for (const c of CATEGORIES) {
      const v = String(f.get(c) ?? '').trim()
      // Blank: no cap. Anything else goes as typed, and the API says what is wrong with it.
      body[c] = v === '' ? null : Number(v)
    }
    save.mutate(body)
  }
  if (usage.isPending) return <><PageHead title={t('nav.usage')} /><Loading /></>
  if (usage.error) return <><PageHead title={t('nav.usage')} /><ErrorBox error={usage.error} /></>
  const u = usage.data
  return (
    <div>
      <PageHead title={t('nav.usage')} />
      <div className="card">
        <h2>{t('usage.thisMonth', { month: monthOf(u.periodStart) })}</h2>
        <p className="small muted">{t('usage.text', { from: formatDay(u.periodStart, 'UTC'), to: formatDay(new Date(u.periodEnd).getTime() - 1, 'UTC') })}</p>
        <div className="table-wrap"><table className="rows">
          <thead><tr><th scope="col">{t('usage.category')}</th><th scope="col">{t('usage.used')}</th><th scope="col">{t('usage.cap')}</th><th scope="col" style={{ width: '40%' }}>{t('usage.ofCap')}</th></tr></thead>
          <tbody>{CATEGORIES.map((c) => {
            const cap = u.limits[c]
            const used = u[c]
            const share = cap === null ? 0 : cap === 0 ? 1 : used / cap
            const tone = cap === null ? 'ok' : share >= 1 ? 'danger' : share >= 0.8 ? 'warn' : 'ok'
            return (
              <tr key={c}>
                <th scope="row">{categoryLabel(c).title}<div className="small muted" style={{ textTransform: 'none', letterSpacing: 0, fontWeight: 400 }}>{categoryLabel(c).hint}</div></th>
                <td data-testid={`used-${c}`}>{num(used)}</td>
                <td data-testid={`cap-${c}`}>{cap === null ? t('usage.noCap') : num(cap)}</td>
                <td>{cap === null ? <span className="small muted">{t('usage.unlimited')}</span> : (
                  <>
                    <Meter label={t('usage.meter', { category: categoryLabel(c).title })} value={cap === 0 ? 1 : used} max={cap === 0 ? 1 : cap} valueText={t('usage.meterText', { used: num(used), cap: num(cap) })} tone={tone} />
                    <span className="small muted">{cap === 0 ? t('usage.blocked') : t('usage.left', { pct: num(Math.round(share * 100)), left: num(Math.max(0, cap - used)) })}</span>
                  </>
                )}</td>
              </tr>
            )
          })}</tbody>
        </table></div>
      </div>
      {manage ? (
        <form key={formKey} className="card" onSubmit={submit} noValidate>
          <h2>{t('usage.caps')}</h2>
          <p className="small muted">{t('usage.capsText')}</p>
          <ErrorBox error={save.error} shown={[...CATEGORIES]} />
          {save.isSuccess && <div className="alert ok" role="status">{t('usage.saved')}</div>}
          <div className="row">
            {CATEGORIES.map((c) => (
              <Field key={c} label={t('usage.capOf', { category: categoryLabel(c).title })} name={c} type="number" inputMode="numeric" min={0} step={1}
                defaultValue={u.limits[c] ?? ''} placeholder={t('usage.noCap')} error={fieldError(save.error, c)} />
            ))}
          </div>
          <button type="submit" style={{ marginTop: '.85rem' }} disabled={save.isPending}>{save.isPending ? t('ui.saving') : t('usage.save')}</button>
        </form>
      ) : (
        <div className="card"><p style={{ margin: 0 }}>{t('usage.readOnly', { role: t(`role.${project.role}`) })}</p></div>
      )}
    </div>
  )
}
