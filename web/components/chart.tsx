import { useEffect, useRef } from 'react'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'

/** Tick steps of a chart of days, in seconds: 1, 2, 7, 14 days, about a month, a quarter, a year. */
const DAY_TICKS = [1, 2, 7, 14, 30, 91, 365].map((d) => d * 86_400)

/** Tick steps of a chart of counts: 1, 2, 5, 10, 20, 50... */
const COUNT_TICKS = Array.from({ length: 30 }, (_, i) => [1, 2, 5][i % 3] * 10 ** Math.floor(i / 3))

/** One line of a time chart: its label, colour and one value per point of `x` (null: no value). */
export interface Series { label: string; color: string; values: Array<number | null> }

/**
 * A time-series line chart (uPlot: 50 KB raw, canvas, no dependencies; README, Development). `x` holds
 * the points' times in seconds since the epoch; uPlot draws the axis in the browser's time zone. It
 * follows its container's width. With no points at all it shows `empty` instead of a blank canvas.
 * The chart is an image for a screen reader: `label` names it, and `summary` (a table or a sentence next
 * to it) is where the figures are read.
 */
export function TimeChart({ x, series, label, height = 240, empty = 'No data in this range yet.', interval, counts }: {
  x: number[]; series: Series[]; label: string; height?: number; empty?: string
  /** 'day': one point per day, so the time axis ticks whole days only (never hours between them). */
  interval?: 'hour' | 'day'
  /** The values are counts: the value axis ticks whole numbers only (no 0.25 of an email). */
  counts?: boolean
}) {
  const box = useRef<HTMLDivElement>(null)
  const hasData = x.length > 0 && series.some((s) => s.values.some((v) => v !== null && v !== 0))
  useEffect(() => {
    const el = box.current
    if (!el || !hasData) return
    const plot = new uPlot({
      width: Math.max(el.clientWidth, 280), height,
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: x.length < 60 } }))],
      axes: [interval === 'day' ? { incrs: DAY_TICKS } : {}, counts ? { size: 56, incrs: COUNT_TICKS } : { size: 56 }],
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
    }, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, el)
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(el.clientWidth, 280), height }))
    resize.observe(el)
    return () => { resize.disconnect(); plot.destroy() }
  }, [x, series, height, hasData, interval, counts])
  if (!hasData) return <p className="empty" role="note">{empty}</p>
  return <div className="chart" ref={box} role="img" aria-label={label} />
}
