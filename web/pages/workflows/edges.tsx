import { BaseEdge, type EdgeProps, useNodes } from '@xyflow/react'

/**
 * The graph's edges, routed so that none runs behind a step. An edge is React Flow's
 * curve from the bottom handle down to the top handle when that curve touches no other step; otherwise it is
 * drawn with right angles: a short way down, across to a free lane, along it, across above the target and in.
 * Lanes are tried nearest first (the target's column, the source's, between them, then beside every step in
 * the way); a way back up (a loop) takes a lane beside the steps. Steps wherever the user dragged them.
 */

interface Rect { x1: number; y1: number; x2: number; y2: number }
type Pt = [number, number]

const PAD = 8
const inside = ([x, y]: Pt, r: Rect) => x > r.x1 && x < r.x2 && y > r.y1 && y < r.y2

/** The curve React Flow draws from a bottom handle to a top handle (its control offset, curvature 0.25). */
function curve(sx: number, sy: number, tx: number, ty: number): { c1: Pt; c2: Pt } {
  const d = ty - sy
  const o = d >= 0 ? 0.5 * d : 0.25 * 25 * Math.sqrt(-d)
  return { c1: [sx, sy + o], c2: [tx, ty - o] }
}

function bezierAt(p0: Pt, p1: Pt, p2: Pt, p3: Pt, t: number): Pt {
  const u = 1 - t
  const a = u * u * u
  const b = 3 * u * u * t
  const c = 3 * u * t * t
  const d = t * t * t
  return [a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0], a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1]]
}

/** Whether an axis-aligned segment passes through a rectangle. */
function segmentHits(a: Pt, b: Pt, r: Rect): boolean {
  if (a[0] === b[0]) {
    const [y1, y2] = a[1] < b[1] ? [a[1], b[1]] : [b[1], a[1]]
    return a[0] > r.x1 && a[0] < r.x2 && y2 > r.y1 && y1 < r.y2
  }
  const [x1, x2] = a[0] < b[0] ? [a[0], b[0]] : [b[0], a[0]]
  return a[1] > r.y1 && a[1] < r.y2 && x2 > r.x1 && x1 < r.x2
}

/** A polyline with rounded corners as an SVG path. */
function rounded(points: Pt[], radius = 10): string {
  let d = `M ${points[0][0]},${points[0][1]}`
  for (let i = 1; i < points.length - 1; i++) {
    const [px, py] = points[i - 1]
    const [x, y] = points[i]
    const [nx, ny] = points[i + 1]
    const r = Math.min(radius, Math.hypot(x - px, y - py) / 2, Math.hypot(nx - x, ny - y) / 2)
    const inX = x - Math.sign(x - px) * r
    const inY = y - Math.sign(y - py) * r
    const outX = x + Math.sign(nx - x) * r
    const outY = y + Math.sign(ny - y) * r
    d += ` L ${inX},${inY} Q ${x},${y} ${outX},${outY}`
  }
  const last = points[points.length - 1]
  return `${d} L ${last[0]},${last[1]}`
}

/**
 * The route from a source handle to a target handle past `others` (every other step) and the two ends'
 * own boxes (`ends`, which only the middle of a route must avoid). Exported for its test.
 */
export function routeEdge(sx: number, sy: number, tx: number, ty: number, others: Rect[], ends: Rect[]): { path: string; points: Pt[] | null; label: Pt } {
  const { c1, c2 } = curve(sx, sy, tx, ty)
  const all = [...others, ...ends]
  const samples = Array.from({ length: 40 }, (_, i) => (i + 1) / 41)
  const curveClear = ty > sy + 20 && samples.every((t) => {
    const p = bezierAt([sx, sy], c1, c2, [tx, ty], t)
    return !others.some((r) => inside(p, r)) && (t < 0.15 || t > 0.85 || !ends.some((r) => inside(p, r)))
  })
  if (curveClear) return { path: `M ${sx},${sy} C ${c1[0]},${c1[1]} ${c2[0]},${c2[1]} ${tx},${ty}`, points: null, label: bezierAt([sx, sy], c1, c2, [tx, ty], 0.5) }

  const lo = Math.min(sy, ty) - 80
  const hi = Math.max(sy, ty) + 80
  const band = all.filter((r) => r.y2 > lo && r.y1 < hi)
  const right = Math.max(sx, tx, ...band.map((r) => r.x2)) + 24
  const left = Math.min(sx, tx, ...band.map((r) => r.x1)) - 24
  const lanes = [tx, sx, (sx + tx) / 2, ...band.map((r) => r.x2 + 16), ...band.map((r) => r.x1 - 16), right, left]
  const outs = [sy + 18, sy + 34, sy + 54]
  const ins = [ty - 18, ty - 34, ty - 54]
  let best: Pt[] | null = null
  for (const x of lanes) {
    for (const yo of outs) {
      for (const yi of ins) {
        const pts: Pt[] = [[sx, sy], [sx, yo], [x, yo], [x, yi], [tx, yi], [tx, ty]]
        const clear = pts.slice(1).every((b, i) => {
          const a = pts[i]
          if (a[0] === b[0] && a[1] === b[1]) return true
          // The first and last legs leave and enter the ends' own boxes; the rest avoids every box.
          const boxes = i === 0 || i === pts.length - 2 ? others : all
          return !boxes.some((r) => segmentHits(a, b, r))
        })
        if (clear) { best = pts; break }
      }
      if (best) break
    }
    if (best) break
  }
  const pts = best ?? [[sx, sy], [sx, sy + 18], [right, sy + 18], [right, ty - 18], [tx, ty - 18], [tx, ty]]
  const clean = pts.filter((p, i) => i === 0 || p[0] !== pts[i - 1][0] || p[1] !== pts[i - 1][1])
  return { path: rounded(clean), points: clean, label: [pts[2][0], (pts[2][1] + pts[3][1]) / 2] }
}

export function RoutedEdge(props: EdgeProps) {
  const { id, source, target, sourceX, sourceY, targetX, targetY, markerEnd, style, label, interactionWidth } = props
  const nodes = useNodes()
  const box = (n: (typeof nodes)[number]): Rect | null => {
    const w = n.measured?.width ?? n.width
    const h = n.measured?.height ?? n.height
    if (!w || !h) return null
    return { x1: n.position.x - PAD, y1: n.position.y - PAD, x2: n.position.x + w + PAD, y2: n.position.y + h + PAD }
  }
  const others = nodes.filter((n) => n.id !== source && n.id !== target).map(box).filter((r): r is Rect => r !== null)
  const ends = nodes.filter((n) => n.id === source || n.id === target).map(box).filter((r): r is Rect => r !== null)
  const r = routeEdge(sourceX, sourceY, targetX, targetY, others, ends)
  return (
    <BaseEdge id={id} path={r.path} markerEnd={markerEnd} style={style} interactionWidth={interactionWidth}
      label={label} labelX={r.label[0]} labelY={r.label[1]} labelBgPadding={[4, 2]} labelBgBorderRadius={3} />
  )
}

export const edgeTypes = { routed: RoutedEdge }
