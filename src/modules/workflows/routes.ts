import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import * as service from './service'

const tags = ['workflows']

const STEP_CONFIGS = 'Configs by type: SEND_EMAIL `{templateId, recipient?: {type: "CONTACT"|"CUSTOM", email?}}`; DELAY `{amount, unit: "minutes"|"hours"|"days"}` (at most 365 days); WAIT_FOR_EVENT `{eventName, timeout?}` (seconds; branches `event`, `timeout`); CONDITION `{field, operator, value, unit?}` (a contact field of the segment filters, or `context.<path>` of the execution context; branches `yes`, `no`); WEBHOOK `{url, method?: "POST", headers?, body?}`; UPDATE_CONTACT `{data?, subscribed?}`; EXIT `{reason?}`. A bad config answers 422 naming `config.<key>`.'
const ENABLED = 'While the workflow is enabled, the graph must stay valid after the edit (422 naming the step and the fault): disable it to make intermediate edits.'

export function workflowsRoutes(deps: Deps) {
  return new Elysia({ prefix: '/workflows' })
    .use(authPlugin(deps))
    .get('', ({ ctx, query }) => service.listWorkflows(ctx, query), {
      apiKey: 'secret', query: m.ListWorkflowsQuery, response: { 200: m.WorkflowList },
      detail: { tags, summary: 'List workflows (offset list, newest first)' },
    })
    .get('/fields', ({ ctx }) => service.workflowFields(ctx), {
      apiKey: 'secret', response: { 200: m.FieldsResult },
      detail: { tags, summary: 'Fields usable in CONDITION steps', description: '`contact`: the contact fields of the filter engine; `event`: the execution context (`context.event.*` is the trigger event).' },
    })
    .post('', async ({ ctx, body, set }) => {
      const out = await service.createWorkflow(ctx, body)
      set.status = 201
      return out
    }, {
      apiKey: 'secret', body: m.CreateWorkflow, response: { 201: m.Workflow },
      detail: { tags, summary: 'Create a workflow', description: '201. Always triggerType EVENT and enabled false, with one TRIGGER step. `eventName` (or `triggerConfig.eventName`) is the event that starts an execution: a tracked event or one the service emits (email.*, contact.subscribed, contact.unsubscribed, segment.<slug>.entry/exit).' },
    })
    .get('/:id', ({ ctx, params }) => service.getWorkflow(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.Workflow },
      detail: { tags, summary: 'Get a workflow with its steps and transitions' },
    })
    .patch('/:id', ({ ctx, params, body }) => service.updateWorkflow(ctx, params.id, body), {
      apiKey: 'secret', params: m.IdParams, body: m.UpdateWorkflow, response: { 200: m.Workflow },
      detail: { tags, summary: 'Update metadata, trigger, enabled, allowReentry', description: 'Enabling checks the graph: one trigger, every step reachable, CONDITION with `yes` and `no`, WAIT_FOR_EVENT with `event` (and `timeout` when it has a timeout), templates that exist, no cycle without a DELAY or WAIT_FOR_EVENT; a fault answers 422 naming the step (`steps.<id>`) and what is wrong.' },
    })
    .delete('/:id', async ({ ctx, params, set }) => {
      await service.deleteWorkflow(ctx, params.id)
      set.status = 204
      return ''
    }, {
      apiKey: 'secret', params: m.IdParams,
      detail: { tags, summary: 'Delete a workflow', description: '204. 409 CONFLICT while it has RUNNING or WAITING executions: cancel them or let them finish first.' },
    })
    .post('/:id/steps', async ({ ctx, params, body, set }) => {
      const out = await service.addStep(ctx, params.id, body)
      set.status = 201
      return out
    }, {
      apiKey: 'secret', params: m.IdParams, body: m.AddStep, response: { 201: m.Step },
      detail: { tags, summary: 'Add a step', description: `201. ${STEP_CONFIGS} ${ENABLED}` },
    })
    .patch('/:id/steps/:stepId', ({ ctx, params, body }) => service.updateStep(ctx, params.id, params.stepId, body), {
      apiKey: 'secret', params: m.StepParams, body: m.UpdateStep, response: { 200: m.Step },
      detail: { tags, summary: 'Update a step\'s name, config or position', description: `${STEP_CONFIGS} ${ENABLED}` },
    })
    .delete('/:id/steps/:stepId', async ({ ctx, params, query, set }) => {
      await service.deleteStep(ctx, params.id, params.stepId, query.splice === 'true')
      set.status = 204
      return ''
    }, {
      apiKey: 'secret', params: m.StepParams, query: m.DeleteStepQuery,
      detail: { tags, summary: 'Delete a step', description: `204. Its transitions go with it; \`splice=true\` reconnects each transition into the step to the step after it (a step with several ways out cannot be spliced). The TRIGGER step cannot be deleted. ${ENABLED}` },
    })
    .post('/:id/transitions', async ({ ctx, params, body, set }) => {
      const out = await service.addTransition(ctx, params.id, body)
      set.status = 201
      return out
    }, {
      apiKey: 'secret', params: m.IdParams, body: m.AddTransition, response: { 201: m.Transition },
      detail: { tags, summary: 'Add a transition', description: `201. From a CONDITION step \`branch\` is yes or no; from a WAIT_FOR_EVENT step, event or timeout; other steps take none and have one way out (409 when it exists). ${ENABLED}` },
    })
    .delete('/:id/transitions/:transitionId', async ({ ctx, params, set }) => {
      await service.deleteTransition(ctx, params.id, params.transitionId)
      set.status = 204
      return ''
    }, {
      apiKey: 'secret', params: m.TransitionParams,
      detail: { tags, summary: 'Delete a transition', description: `204. ${ENABLED}` },
    })
    .post('/:id/executions', async ({ ctx, params, body, set }) => {
      const out = await service.startExecution(ctx, params.id, body)
      set.status = 201
      return out
    }, {
      apiKey: 'secret', params: m.IdParams, body: m.StartExecution, response: { 201: m.Execution },
      detail: { tags, summary: 'Start an execution for a contact', description: '201. `contactId` or `email` names the contact (404 when not found); `context` is kept on the execution (CONDITION `context.<key>`, template variables). Enabled or not, the graph must be valid (422). allowReentry false: 409 when the contact entered before; true: 409 while it has a RUNNING or WAITING execution.' },
    })
    .get('/:id/executions', ({ ctx, params, query }) => service.listExecutions(ctx, params.id, query), {
      apiKey: 'secret', params: m.IdParams, query: m.ListExecutionsQuery, response: { 200: m.ExecutionList },
      detail: { tags, summary: 'List executions (cursor list, newest first), filterable by status' },
    })
    .get('/:id/stats', ({ ctx, params }) => service.stepStats(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.StepStats },
      detail: { tags, summary: 'Per-step counts', description: 'For every step: how many times executions entered it, how many wait there now, and how many of its runs completed or failed.' },
    })
    .post('/:id/executions/:executionId/continue', ({ ctx, params }) => service.continueOne(ctx, params.id, params.executionId), {
      apiKey: 'secret', params: m.ExecutionParams, response: { 200: m.Execution },
      detail: { tags, summary: 'Continue a waiting execution now', description: 'For test runs: a WAITING execution\'s DELAY, or WAIT_FOR_EVENT with a timeout, ends now as it would at its time (the DELAY goes on; the WAIT_FOR_EVENT takes its timeout branch). 409 CONFLICT when it is not WAITING, or waits for an event without a timeout.' },
    })
    .post('/:id/executions/cancel-all', ({ ctx, params }) => service.cancelAll(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.CancelAllResult },
      detail: { tags, summary: 'Cancel every RUNNING or WAITING execution', description: 'Their pending steps are skipped; answers how many were cancelled.' },
    })
    .get('/:id/executions/:executionId', ({ ctx, params }) => service.getExecution(ctx, params.id, params.executionId), {
      apiKey: 'secret', params: m.ExecutionParams, response: { 200: m.Execution },
      detail: { tags, summary: 'Get an execution with its step executions (status, output, error, timestamps)' },
    })
    .delete('/:id/executions/:executionId', ({ ctx, params }) => service.cancelOne(ctx, params.id, params.executionId), {
      apiKey: 'secret', params: m.ExecutionParams, response: { 200: m.Execution },
      detail: { tags, summary: 'Cancel a RUNNING or WAITING execution', description: 'It becomes CANCELLED and its pending steps are skipped; 409 CONFLICT when it already ended.' },
    })
}
