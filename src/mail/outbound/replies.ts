/**
 * What an SMTP reply means for a message: delivered, retry later (and when), the destination is
 * throttling us, or a permanent failure (and whether the address should be suppressed).
 */

export interface SmtpReply {
  /** Basic status code (250, 451, 550...), 0 when the failure had no reply (timeout, connection). */
  code: number
  /** Enhanced status code (RFC 3463) when the reply carries one, e.g. "5.1.1". */
  enhanced: string | null
  /** The reply as received (first line for multi-line replies, joined with a space). */
  text: string
}

export function parseReply(text: string): SmtpReply {
  const clean = text.replace(/\r?\n\d{3}[- ](?:[245]\.\d{1,3}\.\d{1,3} )?/g, ' ').replace(/\s+/g, ' ').trim()
  const m = /^(\d{3})[ -]?(?:([245]\.\d{1,3}\.\d{1,3})\b)?/.exec(clean)
  return { code: m ? Number(m[1]) : 0, enhanced: m?.[2] ?? null, text: clean }
}

/** Replies that say "too many connections / messages / rate limited": the destination wants less of us. */
const THROTTLE_RE = /too many (connections|concurrent|sessions|messages)|rate.?limit|throttl|slow down|try again later.*(connection|rate)|4\.7\.0.*(limit|connections)|exceeded.*(limit|rate)|too many .*from your ip|temporarily deferred due to (unexpected )?volume/i

export type Verdict = 'delivered' | 'temporary' | 'throttle' | 'permanent'

export function verdictOf(reply: SmtpReply): Verdict {
  if (reply.code >= 200 && reply.code < 300) return 'delivered'
  if (reply.code >= 500) return 'permanent'
  if (reply.code === 421 || reply.code === 450 || reply.code === 451 || reply.code === 452) {
    if (THROTTLE_RE.test(reply.text)) return 'throttle'
  }
  if (reply.code === 421 && reply.enhanced === '4.7.0') return 'throttle'
  return 'temporary'
}

/**
 * Whether a permanent failure means the address itself is bad (suppress it) rather than the message
 * or the sender being refused. Enhanced codes decide when present: 5.1.x (bad mailbox or domain) and
 * 5.2.1 (mailbox disabled) suppress; 5.7.x policy, 5.6.x content, 5.3.4 / 5.2.3 size, 5.2.2 mailbox full
 * do not. Without an enhanced code, a refusal of RCPT TO (or a 550/551/553 at any stage) suppresses.
 */
export function shouldSuppress(reply: SmtpReply, stage: 'rcpt' | 'other'): boolean {
  if (reply.code < 500) return false
  const e = reply.enhanced
  if (e) {
    if (e.startsWith('5.1.')) return true
    if (e === '5.2.1' || e === '5.2.0') return true
    return false
  }
  if (stage === 'rcpt') return true
  if (/spam|policy|blocked|blacklist|blocklist|reputation|content|virus|too (large|big)|size/i.test(reply.text)) return false
  return reply.code === 550 || reply.code === 551 || reply.code === 553
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 }

/** "try again in 300 seconds", "retry in 5 minutes", "please try later in 1 hour" -> ms, else null. */
export function retryHintMs(text: string): number | null {
  const m = /(?:try|retry)(?: again)?(?: later)?(?: after| in)\s+(\d{1,6})\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)\b/i.exec(text)
  if (!m) return null
  const unit = UNIT_MS[m[2][0].toLowerCase()]
  return Number(m[1]) * unit
}

export const RETRY_BASE_MS = 60_000
export const RETRY_CAP_MS = 4 * 3_600_000
export const MAX_QUEUE_LIFETIME_MS = 3 * 24 * 3_600_000
/** A hint is honoured within these bounds. */
const HINT_MIN_MS = 1000
const HINT_MAX_MS = 6 * 3_600_000

/**
 * Delay before the next attempt after `attempts` temporary failures (1-based): a server's hint when it
 * gives one, else exponential (1, 2, 4 ... minutes, capped at 4 hours) with +-10% jitter so that a
 * burst of deferred mail does not come back all at once.
 */
export function retryDelayMs(attempts: number, replyText: string, random = Math.random): number {
  const hint = retryHintMs(replyText)
  if (hint !== null) return Math.min(HINT_MAX_MS, Math.max(HINT_MIN_MS, hint))
  const base = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1))
  return Math.round(base * (0.9 + 0.2 * random()))
}
