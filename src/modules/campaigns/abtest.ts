/**
 * A/B tests of campaigns (docs/architecture.md, Campaigns): the draw of the test group, the
 * content of a variant and the choice of the winner. Pure functions; the fan-out and the winner job
 * (fanout.ts, jobs.ts) hold the state.
 */
import type { AbTestConfig, AbTestState } from '../../db/schema/campaigns'
import type { CampaignRow } from './repo'

/**
 * A contact's draw in [0, 1): a keyed hash of the test's random seed and the contact id. The same
 * contact always draws the same number in one test, so a fan-out resumed after a crash draws the group
 * it drew before; another test (another seed) draws another group.
 */
export function drawOf(seed: string, contactId: string): number {
  const h = Bun.hash.wyhash(`${seed}:${contactId}`)
  return Number(BigInt.asUintN(52, BigInt(h))) / 2 ** 52
}

/**
 * The cuts of the test group from the draws of the audience (the contacts a send would mail): the
 * `round(n * testPercent / 100)` lowest draws (at least one per variant while the audience has as many),
 * split in equal runs (sizes differ by one at most), so the group and each variant are exact for the
 * audience as it is when the test starts. cuts[i] is the first draw above variant i's run.
 */
export function cutsOf(draws: number[], config: Pick<AbTestConfig, 'testPercent' | 'variants'>): number[] {
  const sorted = [...draws].sort((a, b) => a - b)
  const k = config.variants.length
  const size = Math.min(sorted.length, Math.max(Math.round((sorted.length * config.testPercent) / 100), k))
  const cuts: number[] = []
  for (let i = 1; i <= k; i++) {
    const end = Math.floor((i * size) / k)
    cuts.push(end < sorted.length ? sorted[end] : 1)
  }
  return cuts
}

/** The variant of a draw (null: not in the test group). */
export function variantOf(state: Pick<AbTestState, 'cuts'>, draw: number): number | null {
  for (let i = 0; i < state.cuts.length; i++) if (draw < state.cuts[i]) return i
  return null
}

/** The campaign as variant `i` is sent (its subject, and its body or the campaign's). */
export function withVariant(row: CampaignRow, i: number | null): CampaignRow {
  const v = i === null ? undefined : row.abTest?.variants[i]
  return v ? { ...row, subject: v.subject, body: v.body ?? row.body } : row
}

/** Whether any variant has a body of its own (then the test group's bodies are rendered at fan-out). */
export function variantBodies(config: AbTestConfig | null): boolean {
  return Boolean(config?.variants.some((v) => v.body !== undefined))
}

export interface VariantCount { index: number; recipients: number; opened: number; clicked: number }

/**
 * The winner: the highest rate by the metric (unique opens or clicks over the variant's recipients); a
 * tie goes to the higher rate by the other metric, then to the first variant (A). With no engagement at
 * all, the first variant wins, and the reason says so.
 */
export function chooseWinner(counts: VariantCount[], metric: AbTestConfig['metric'], k: number): { winner: number; reason: string } {
  const by = new Map(counts.map((c) => [c.index, c]))
  const rate = (i: number, m: 'opens' | 'clicks') => {
    const c = by.get(i)
    if (!c?.recipients) return 0
    return (m === 'opens' ? c.opened : c.clicked) / c.recipients
  }
  const other = metric === 'opens' ? 'clicks' : 'opens'
  let best = 0
  for (let i = 1; i < k; i++) {
    const d = rate(i, metric) - rate(best, metric)
    if (d > 0 || (d === 0 && rate(i, other) > rate(best, other))) best = i
  }
  const letter = String.fromCharCode(65 + best)
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`
  if (Array.from({ length: k }, (_, i) => rate(i, metric) + rate(i, other)).every((x) => x === 0)) {
    return { winner: best, reason: `No ${metric} or ${other} in the test group: variant ${letter} (the first) is sent` }
  }
  const tied = Array.from({ length: k }, (_, i) => i).filter((i) => i !== best && rate(i, metric) === rate(best, metric))
  const tail = tied.length ? `, tied with ${tied.map((i) => String.fromCharCode(65 + i)).join(', ')} and ahead by ${other} or by order` : ''
  return { winner: best, reason: `Variant ${letter}: ${metric === 'opens' ? 'open' : 'click'} rate ${pct(rate(best, metric))}${tail}` }
}
