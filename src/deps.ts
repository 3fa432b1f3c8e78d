import type Redis from 'ioredis'
import type { Clock } from './clock'
import type { Config } from './config'
import type { Store } from './db/client'
import type { GroupCommit } from './db/group-commit'
import type { NodeRegistry } from './jobs/nodes'
import type { Logger } from './log'
import type { RateLimiter } from './http/ratelimit'
import type { MailOut } from './mail/system'
import type { OutboxLocal } from './modules/events/outbox'
import type { TrackWriter } from './modules/events/writer'

/**
 * What this process runs on its store, built once by the composition root (`storeRuntime` in
 * src/main.ts) and reached through `deps.runtime`: nothing of it is created on first use by the module
 * that uses it. Each part starts its timers or threads only when it is used (a one-shot CLI command
 * starts none). The per-store caches that run nothing (compiled statements, derived keys, the contact
 * search copy) stay with the code that reads them: docs/architecture.md, "What a process runs".
 */
export interface StoreRuntime {
  /** The store all of these work on: `deps.store`. */
  store: Store
  /** This process's row in `nodes`: heartbeats, its lock file, the holder ids of its workers (src/jobs/nodes.ts). */
  node: NodeRegistry
  /** Group commit on the main thread: sends, workflow steps, tracks off the track writer (src/db/group-commit.ts). */
  commits: GroupCommit
  /** A file-backed SQLite store's track writer and checkpointer threads (src/modules/events/writer.ts); null otherwise. */
  trackWriter: TrackWriter | null
  /** The events' outbox in this process: recent events kept for its drainer, who carries its claims (src/modules/events/outbox.ts). */
  outbox: OutboxLocal
}

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
  /** What this process runs on `store` (StoreRuntime above); `runtime.store` is `store`. */
  runtime: StoreRuntime
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
