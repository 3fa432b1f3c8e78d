/**
 * MAILCTL_OUTBOUND=capture: messages are stored in `mail_capture` (with the raw signed MIME) instead of
 * being delivered, for development. The store write happens in the transaction that records the
 * outcome (src/mail/outbound/recorder.ts, capture-repo.ts); `mailctl queue --captured` and GET /activity list them.
 */
import type { Delivery, Envelope, Transport } from './types'

export class CaptureTransport implements Transport {
  readonly name = 'capture' as const
  async deliver(_env: Envelope, raw: Buffer, settle: (d: Delivery) => Promise<void>): Promise<void> {
    await settle({ kind: 'captured', raw })
  }
  destinations() { return [] }
  async close(): Promise<void> {}
}
