/**
 * A horizontal gauge with threshold marks: a rate against its warning and suspension thresholds, or a
 * month's usage against its cap. A <meter> (name, value and a spoken value text) for assistive technology; the marks and
 * the figures are also written out beside it, so nothing is said by colour alone.
 */
export interface Mark { at: number; label: string; tone: 'warn' | 'danger' }

export function Meter({ label, value, max, valueText, marks = [], tone }: {
  label: string; value: number; max: number; valueText: string; marks?: Mark[]; tone: 'ok' | 'warn' | 'danger'
}) {
  const scale = max > 0 ? max : 1
  const width = Math.min(100, Math.max(0, (value / scale) * 100))
  return (
    <div className="meter-wrap">
      {/* What assistive technology reads; the bar below is its picture. */}
      <meter className="skip" aria-label={label} min={0} max={scale} value={Math.min(value, scale)} aria-valuetext={valueText} />
      <div className={`meter ${tone}`} aria-hidden="true">
        <div className="meter-fill" style={{ width: `${width}%` }} />
        {marks.map((m) => (
          <div key={m.label} className={`meter-mark ${m.tone}`} style={{ left: `${Math.min(100, (m.at / scale) * 100)}%` }}>
            <span>{m.label}</span>
          </div>
        ))}
      </div>
    </div>
  )
}
