import type Redis from 'ioredis'
import type { Clock } from './clock'
import type { Config } from './config'
import type { Store } from './db/client'
import type { Logger } from './log'
import type { RateLimiter } from './http/ratelimit'
import type { MailOut } from './mail/system'

/**
 * What the composition root (src/main.ts) builds once and hands to every transport: HTTP routes,
 * the CLI, SMTP servers and job handlers all call service verbs with these.
 */
export interface Deps {
  config: Config
  store: Store
  log: Logger
  limiter: RateLimiter
  mail: MailOut
  redis: Redis | null
  /** Secret used to sign sessions and links: MAILCTL_JWT_SECRET, derived from MAILCTL_SECRET, or the data dir's (src/secrets.ts). */
  secret: string
  /**
   * Outbound HTTP to third parties (SNS signing certificates and subscription confirmation); the global
   * fetch when absent. Tests inject one that never leaves the machine.
   */
  fetch?: FetchLike
  /**
   * The one clock of everything whose behaviour depends on the time (src/clock.ts): the system clock in
   * the process, a clock the test moves in tests.
   */
  clock: Clock
}

export type FetchLike = (url: string, init?: RequestInit) => Promise<Response>

/** Who is acting: an API key, a dashboard user, the CLI or a named job. */
export type Actor =
  | { kind: 'key'; keyKind: 'public' | 'secret' }
  | { kind: 'user'; userId: string }
  | { kind: 'cli' }
  | { kind: 'job'; name: string }
  /** Someone holding a signed link from an email (subscription pages, tracking); see src/mail/links.ts. */
  | { kind: 'link' }

/** The context of one service call on one project's data. */
export interface Ctx {
  deps: Deps
  store: Store
  projectId: string
  actor: Actor
  /** `deps.clock` when the call began: the time of the call's writes. A long call reads `deps.clock` again. */
  now: Date
}

export function ctxFor(deps: Deps, projectId: string, actor: Actor): Ctx {
  return { deps, store: deps.store, projectId, actor, now: deps.clock.date() }
}
