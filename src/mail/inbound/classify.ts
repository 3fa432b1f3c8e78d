/**
 * One entry point for the inbound receiver: is this raw message a bounce (DSN), a complaint (ARF),
 * ordinary mail, or unreadable? Pure and never throws.
 */
import { parseArf, type ArfReport } from './arf'
import { parseDsn, type DsnReport } from './dsn'

export type InboundClass = DsnReport | ArfReport | { kind: 'other' } | { kind: 'unparseable'; reason: string }

export function classifyInbound(raw: Buffer | Uint8Array): InboundClass {
  const arf = parseArf(raw)
  if (arf.kind === 'arf' || arf.kind === 'unparseable') return arf
  const dsn = parseDsn(raw)
  if (dsn.kind === 'not-dsn') return { kind: 'other' }
  return dsn
}
