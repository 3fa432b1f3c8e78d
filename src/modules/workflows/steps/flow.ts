import { UNIT_MS } from '../validate'
import type { StepRunner } from './types'

/** The steps that only move the execution: TRIGGER, DELAY, WAIT_FOR_EVENT, EXIT. */

export const trigger: StepRunner = async ({ exec }) => ({
  kind: 'next', status: 'COMPLETED', output: exec.triggerEventId ? { triggerEventId: exec.triggerEventId } : { manual: true },
})

/** DELAY: due `amount` `unit`s after now by the engine clock; the engine wakes the execution then. */
export const delay: StepRunner = async ({ step, now }) => {
  const unit = step.config.unit as keyof typeof UNIT_MS
  const due = new Date(now.getTime() + Number(step.config.amount) * UNIT_MS[unit])
  return { kind: 'wait', status: 'SCHEDULED', until: due, event: null, output: { dueAt: due.toISOString() } }
}

/** WAIT_FOR_EVENT: waits for the contact's event (branch `event`), or until the timeout (branch `timeout`). */
export const waitForEvent: StepRunner = async ({ step, now }) => {
  const timeout = step.config.timeout as number | undefined
  const until = timeout ? new Date(now.getTime() + timeout * 1000) : null
  const eventName = String(step.config.eventName)
  return { kind: 'wait', status: 'WAITING', until, event: eventName, output: { eventName, ...(until ? { timeoutAt: until.toISOString() } : {}) } }
}

export const exit: StepRunner = async ({ step }) => {
  const reason = typeof step.config.reason === 'string' ? step.config.reason : null
  return { kind: 'exit', reason, output: reason ? { reason } : {} }
}
