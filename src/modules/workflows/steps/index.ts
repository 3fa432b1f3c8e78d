import type { StepType } from '../model'
import { condition } from './condition'
import { delay, exit, trigger, waitForEvent } from './flow'
import { sendEmail } from './send-email'
import type { StepRunner } from './types'
import { updateContactStep } from './update-contact'
import { webhook } from './webhook'

/** The runner of each step type. */
export const STEP_RUNNERS: Record<StepType, StepRunner> = {
  TRIGGER: trigger,
  SEND_EMAIL: sendEmail,
  DELAY: delay,
  WAIT_FOR_EVENT: waitForEvent,
  CONDITION: condition,
  WEBHOOK: webhook,
  UPDATE_CONTACT: updateContactStep,
  EXIT: exit,
}

export { StepFailure, type StepOutcome } from './types'
