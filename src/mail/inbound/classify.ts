/**
 * One entry point for the inbound receiver: is this raw message a bounce (DSN), a complaint (ARF),
 * ordinary mail, or unreadable? Pure and never throws. The message is parsed once for both readers.
 */
import { arfOf, type ArfReport } from './arf'
import { dsnOf, type DsnReport } from './dsn'
import { readMime, type MimePart } from './mime'

export type InboundClass = DsnReport | ArfReport | { kind: 'other' } | { kind: 'unparseable'; reason: string }

export function classifyInbound(raw: Buffer | Uint8Array): InboundClass {
  const root = readMime(raw)
  return 'kind' in root ? root : classifyMime(root)
}

/** The same for a message already parsed (parseMime). */
export function classifyMime(root: MimePart): InboundClass {
  const arf = arfOf(root)
  if (arf.kind === 'arf' || arf.kind === 'unparseable') return arf
  const dsn = dsnOf(root)
  if (dsn.kind === 'not-dsn') return { kind: 'other' }
  return dsn
}
