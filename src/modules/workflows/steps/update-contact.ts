import { updateContact } from '../../contacts/service'
import type { ContactData } from '../../contacts/data'
import type { StepRunner } from './types'

/**
 * UPDATE_CONTACT: the contact update of PATCH /contacts/:id (the data rules of src/modules/contacts/data.ts,
 * docs/decisions.md, Contact data: null deletes a key,
 * an empty string is ignored, reserved keys are dropped), so a subscription change emits
 * contact.subscribed or contact.unsubscribed like any other. Repeating it changes nothing more.
 */
export const updateContactStep: StepRunner = async ({ ctx, step, contact }) => {
  const patch: { data?: ContactData; subscribed?: boolean } = {}
  if (step.config.data !== undefined) patch.data = step.config.data as ContactData
  if (typeof step.config.subscribed === 'boolean') patch.subscribed = step.config.subscribed
  const before = contact.subscribed
  const after = await updateContact(ctx, contact.id, patch)
  return { kind: 'next', status: 'COMPLETED', output: { subscribed: after.subscribed, subscriptionChanged: before !== after.subscribed, data: after.data } }
}
