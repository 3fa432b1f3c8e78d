import type { Db } from '../../../db/client'
import type { Ctx } from '../../../deps'
import type { ExecutionRow, StepRow } from '../repo'

/** What a step runner sees: the execution, its step, its contact, and the engine's time. */
export interface StepInput {
  ctx: Ctx
  /** The engine clock's time at the start of the step. */
  now: Date
  exec: ExecutionRow
  step: StepRow
  contact: { id: string; email: string; subscribed: boolean; data: Record<string, unknown> }
}

/**
 * What a step decided. The engine records it in ONE transaction with the execution's move (written only at
 * the version it read), so a step whose effect is a database write (`write`: queue an email) happens once.
 */
export type StepOutcome =
  | {
    kind: 'next'
    status: 'COMPLETED' | 'SKIPPED'
    output: Record<string, unknown>
    /** The branch to follow (CONDITION yes/no); none for the one plain transition. */
    branch?: string
    write?: (db: Db) => Promise<void>
    /** After the commit (wake the outbound pipeline). */
    after?: () => void
  }
  | { kind: 'wait'; status: 'SCHEDULED' | 'WAITING'; until: Date | null; event: string | null; output: Record<string, unknown> }
  | { kind: 'exit'; reason: string | null; output: Record<string, unknown> }
  | { kind: 'fail'; error: string; output?: Record<string, unknown> }

export type StepRunner = (input: StepInput) => Promise<StepOutcome>

/** A failure a step reports with a reason (the engine records it; other errors are recorded with their message). */
export class StepFailure extends Error {}
