import type { SmtpReply } from './replies'

/** One message on its way out: the SMTP envelope and the recipient's domain (routing key). */
export interface Envelope {
  /** VERP return-path (MAIL FROM). */
  from: string
  /** The one recipient (RCPT TO). */
  to: string
  domain: string
}

/**
 * What a transport reports for one message:
 * - accepted: a server answered 250 to the message. `final` when it is the recipient's own mail server
 *   (direct delivery), not when it is a relay (smart host) that delivers on our behalf;
 * - captured: stored instead of delivered (MAILCTL_OUTBOUND=capture);
 * - deferred: temporary failure, try again later (`throttle` when the destination asked for less);
 * - bounced: permanent refusal by the receiving side;
 * - failed: it cannot be sent for a reason on our side.
 * `clearReason` (accepted, deferred, bounced): the session that carried the reply could have been
 * encrypted and was not, and why (a refused STARTTLS, a failed handshake: pool.ts).
 */
export type Delivery =
  | { kind: 'accepted'; final: boolean; host: string; reply: SmtpReply; secure: boolean; clearReason?: string | null }
  | { kind: 'captured'; raw: Buffer }
  | { kind: 'deferred'; reply: SmtpReply; host: string | null; throttle: boolean; clearReason?: string | null }
  | { kind: 'bounced'; reply: SmtpReply; host: string | null; suppress: boolean; clearReason?: string | null }
  | { kind: 'failed'; reason: string }

/**
 * A way out: direct MX delivery, a smart host, or the capture store. `deliver` must call `settle`
 * exactly once and must not use the connection that carried the message again before `settle`
 * resolves: the outcome is durable before anything else happens on that connection. The exceptions:
 * after `stopStarting`, or when `shed` takes back a stalled destination's waiting deliveries, a delivery
 * that has not started its SMTP transaction (waiting for a slot of its destination) returns without
 * settling; the pipeline hands its lease back.
 */
export interface Transport {
  readonly name: 'direct' | 'smtp' | 'capture'
  deliver(env: Envelope, raw: Buffer, settle: (d: Delivery) => Promise<void>): Promise<void>
  /**
   * The destination mail to a recipient domain goes to: the MX host whose connections and limit carry
   * it (direct), or the smart host. Never rejects: a domain whose route cannot be found is its own
   * destination (the delivery then reports the failure). Transports without connections (capture) omit
   * it, and the pipeline does not share its slots out among destinations.
   */
  destinationOf?(domain: string): Promise<string>
  /** How many messages a destination may hold in the pipeline at once (its limit times a depth per connection). */
  capacityOf?(key: string): number
  /**
   * The live nodes that share each destination's connection limit (jobs/nodes.ts, `liveNodes`): each
   * node takes its part, so N nodes do not open N times the limit to one host. Capture omits it.
   */
  shareAmong?(nodes: number): void
  /** This node's connection limit to a destination now: what a stalled destination may keep in the pipeline. */
  connectionsOf?(key: string): number
  /**
   * A destination stalled (deliver.ts): its deliveries waiting for a connection slot return without an
   * outcome (see above), so that their messages go back to the queue. Returns how many were waiting.
   */
  shed?(key: string): number
  /** Shutdown: deliveries not yet on the wire do not start (see above); those on the wire go on. */
  stopStarting?(): void
  /** Per-destination limits (for diagnostics and tests). */
  destinations(): Array<{ key: string; limit: number; active: number; queued: number; rate?: number | null }>
  /**
   * Messages on their way to a server now (connecting, or sent and waiting for the reply): outcomes that
   * may arrive without anything else happening first. Lets the recorder commit at once when it is 0.
   */
  onWire?(): number
  close(): Promise<void>
}
