import { useId } from 'react'
import type { Project } from '../../api'
import { Badge, ErrorBox, Field, FormField, Loading } from '../../components/ui'
import { useCampaignStats } from './stats'
import type { AbTest, Campaign } from './types'
import { formatDate, formatNumber, formatPercent } from '../../format'
import { t } from '../../i18n'

/** A/B tests of a campaign: the composer's part, and the results per variant. */

const letter = (i: number) => String.fromCharCode(65 + i)
const pct = (x: number) => formatPercent(x)

export const newAbTest = (subject: string): AbTest => ({
  variants: [{ subject }, { subject: '' }], testPercent: 20, metric: 'opens', waitMinutes: 240,
})

/** The composer's A/B section: off, or 2-4 subject variants (each with an optional body of its own) and the rules. */
export function AbTestFields({ value, subject, onChange, fieldError }: {
  value: AbTest | null; subject: string; onChange: (v: AbTest | null) => void; fieldError: (field: string) => string | undefined
}) {
  const id = useId()
  const set = (patch: Partial<AbTest>) => value && onChange({ ...value, ...patch })
  const setVariant = (i: number, patch: { subject?: string; body?: string | undefined }) => value && set({
    variants: value.variants.map((v, j) => {
      if (j !== i) return v
      const next = { ...v, ...patch }
      if (next.body === undefined) delete next.body
      return next
    }),
  })
  return (
    <fieldset className="card" aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>{t('ab.title')}</h2>
      <div className="check">
        <input id={`${id}-on`} type="checkbox" checked={value !== null} onChange={(e) => onChange(e.target.checked ? newAbTest(subject) : null)} />
        <label htmlFor={`${id}-on`}>{t('ab.on')}</label>
      </div>
      {value && (
        <div className="stack">
          {value.variants.map((v, i) => (
            <div key={letter(i)} className="row">
              <Field label={t('ab.subject', { v: letter(i) })} value={v.subject} onChange={(e) => setVariant(i, { subject: e.target.value })}
                error={fieldError(`abTest.variants.${i}`) ?? fieldError(`abTest.variants.${i}.subject`)} />
              <FormField label={t('ab.body', { v: letter(i) })} id={`${id}-b${i}`}>
                {(c) => (
                  <textarea {...c} rows={2} value={v.body ?? ''} placeholder={t('ab.bodyPlaceholder')}
                    onChange={(e) => setVariant(i, { body: e.target.value === '' ? undefined : e.target.value })} />
                )}
              </FormField>
              {value.variants.length > 2 && (
                <button type="button" className="secondary" onClick={() => set({ variants: value.variants.filter((_, j) => j !== i) })}>{t('ab.remove', { v: letter(i) })}</button>
              )}
            </div>
          ))}
          {value.variants.length < 4 && (
            <p><button type="button" className="secondary" onClick={() => set({ variants: [...value.variants, { subject: '' }] })}>{t('ab.add', { v: letter(value.variants.length) })}</button></p>
          )}
          <div className="row">
            <Field label={t('ab.percent')} type="number" min={5} max={50} value={value.testPercent}
              onChange={(e) => set({ testPercent: Number(e.target.value) })} hint={t('ab.percentHint')} error={fieldError('abTest.testPercent')} />
            <FormField label={t('ab.metric')} id={`${id}-metric`}>
              {(c) => (
                <select {...c} value={value.metric} onChange={(e) => set({ metric: e.target.value === 'clicks' ? 'clicks' : 'opens' })}>
                  <option value="opens">{t('ab.openRate')}</option>
                  <option value="clicks">{t('ab.clickRate')}</option>
                </select>
              )}
            </FormField>
            <Field label={t('ab.wait')} type="number" min={10} max={1440} value={value.waitMinutes}
              onChange={(e) => set({ waitMinutes: Number(e.target.value) })} hint={t('ab.waitHint')} error={fieldError('abTest.waitMinutes')} />
          </div>
        </div>
      )}
    </fieldset>
  )
}

const PHASES = { TEST: 'ab.phase.TEST', WAITING: 'ab.phase.WAITING', WINNER: 'ab.phase.WINNER' } as const

/** The test group per variant, where the test is and, once chosen, the winner and why. */
export function VariantResults({ project, campaign, every }: { project: Project; campaign: Campaign; every: number | false }) {
  const stats = useCampaignStats(project, campaign.id, every)
  const st = campaign.abTestStatus
  const metric = campaign.abTest?.metric ?? 'opens'
  return (
    <section className="card" aria-labelledby="ab-h">
      <h2 id="ab-h">{t('ab.title')}</h2>
      <ErrorBox error={stats.error} />
      <p data-testid="ab-phase">
        {st ? <strong>{t(PHASES[st.phase])}</strong> : t('ab.notStarted')}
        {st?.phase === 'WAITING' && st.decideAt && <> · {t(metric === 'opens' ? 'ab.decideOpens' : 'ab.decideClicks', { at: formatDate(st.decideAt) })}</>}
        {st?.reason && <> · {st.reason}</>}
      </p>
      {!stats.data ? <Loading /> : (
        <table>
          <caption className="small muted">{t('ab.caption')}</caption>
          <thead><tr><th scope="col">{t('ab.variant')}</th><th scope="col">{t('compose.subject')}</th><th scope="col">{t('stats.recipients')}</th><th scope="col">{t('report.delivered')}</th><th scope="col">{t('report.opened')}</th><th scope="col">{t('report.clicked')}</th><th scope="col">{t('ab.openRate')}</th><th scope="col">{t('ab.clickRate')}</th></tr></thead>
          <tbody>
            {stats.data.variants.map((v) => (
              <tr key={v.index} data-testid={`variant-${letter(v.index)}`}>
                <th scope="row">{letter(v.index)}{v.winner && <> <Badge status="ok">{t('ab.winner')}</Badge></>}</th>
                <td>{v.subject}</td>
                <td>{formatNumber(v.recipients)}</td><td>{formatNumber(v.delivered)}</td>
                <td>{formatNumber(v.opened)}</td><td>{formatNumber(v.clicked)}</td>
                <td>{pct(v.openRate)}</td><td>{pct(v.clickRate)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
