import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'

/** TypeBox models of the workflows module: request validation and the OpenAPI document. */

export const STEP_TYPES = ['TRIGGER', 'SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT'] as const
export type StepType = (typeof STEP_TYPES)[number]
/** The types POST /workflows/:id/steps adds (the one TRIGGER comes with the workflow). */
export const ADDABLE_STEP_TYPES = STEP_TYPES.filter((s) => s !== 'TRIGGER')

export const EXECUTION_STATUSES = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number]

export const STEP_EXECUTION_STATUSES = ['PENDING', 'SCHEDULED', 'WAITING', 'RUNNING', 'COMPLETED', 'SKIPPED', 'FAILED'] as const

export const BRANCHES = ['yes', 'no', 'event', 'timeout'] as const

export const MAX_PAGE_SIZE = 100
export const DEFAULT_PAGE_SIZE = 20

const Name = t.String({ minLength: 1, maxLength: 255, error: 'name must be 1-255 characters' })
const Description = t.String({ maxLength: 1000, error: 'description must be at most 1000 characters' })
const EventName = t.String({ minLength: 1, maxLength: 255, pattern: '^\\S(.*\\S)?$', error: 'eventName must be 1-255 characters without surrounding spaces' })
const Position = t.Object({ x: t.Number(), y: t.Number() }, { error: 'position must be {x: number, y: number}' })
const Config = t.Record(t.String(), t.Unknown(), { error: 'config must be an object', description: 'The step\'s configuration; its shape depends on the type (see the step types)' })

export const Step = t.Object({
  id: t.String(),
  type: t.String({ description: STEP_TYPES.join(', ') }),
  name: t.String(),
  config: t.Record(t.String(), t.Unknown()),
  position: t.Object({ x: t.Number(), y: t.Number() }),
})
export type Step = Static<typeof Step>

export const Transition = t.Object({
  id: t.String(),
  fromStepId: t.String(),
  toStepId: t.String(),
  branch: t.Union([t.String({ description: 'yes | no (CONDITION), event | timeout (WAIT_FOR_EVENT)' }), t.Null()]),
})
export type Transition = Static<typeof Transition>

export const Workflow = t.Object({
  id: t.String(),
  name: t.String(),
  description: t.Union([t.String(), t.Null()]),
  triggerType: t.Literal('EVENT'),
  triggerConfig: t.Object({ eventName: t.String() }),
  enabled: t.Boolean(),
  allowReentry: t.Boolean(),
  steps: t.Array(Step),
  transitions: t.Array(Transition),
  projectId: t.String(),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
})
export type Workflow = Static<typeof Workflow>

export const WorkflowSummary = t.Omit(Workflow, ['steps', 'transitions'])
export type WorkflowSummary = Static<typeof WorkflowSummary>

export const CreateWorkflow = t.Object({
  name: Name,
  description: t.Optional(t.Union([Description, t.Null()])),
  eventName: t.Optional(EventName),
  triggerConfig: t.Optional(t.Object({ eventName: EventName }, { description: 'Accepted instead of eventName' })),
  allowReentry: t.Optional(t.Boolean({ error: 'allowReentry must be a boolean' })),
})
export type CreateWorkflow = Static<typeof CreateWorkflow>

export const UpdateWorkflow = t.Object({
  name: t.Optional(Name),
  description: t.Optional(t.Union([Description, t.Null()])),
  triggerType: t.Optional(t.Literal('EVENT', { error: 'triggerType must be EVENT' })),
  triggerConfig: t.Optional(t.Object({ eventName: EventName })),
  eventName: t.Optional(EventName),
  enabled: t.Optional(t.Boolean({ error: 'enabled must be a boolean' })),
  allowReentry: t.Optional(t.Boolean({ error: 'allowReentry must be a boolean' })),
})
export type UpdateWorkflow = Static<typeof UpdateWorkflow>

export const AddStep = t.Object({
  type: t.Union(ADDABLE_STEP_TYPES.map((v) => t.Literal(v)), { error: `type must be one of ${ADDABLE_STEP_TYPES.join(', ')}` }),
  name: t.Optional(Name),
  config: t.Optional(Config),
  position: t.Optional(Position),
})
export type AddStep = Static<typeof AddStep>

export const UpdateStep = t.Object({
  name: t.Optional(Name),
  config: t.Optional(Config),
  position: t.Optional(Position),
})
export type UpdateStep = Static<typeof UpdateStep>

export const AddTransition = t.Object({
  fromStepId: t.String({ minLength: 1, maxLength: 100 }),
  toStepId: t.String({ minLength: 1, maxLength: 100 }),
  branch: t.Optional(t.Union([...BRANCHES.map((v) => t.Literal(v)), t.Null()], { error: 'branch must be yes, no, event or timeout' })),
})
export type AddTransition = Static<typeof AddTransition>

export const StartExecution = t.Object({
  contactId: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
  email: t.Optional(t.String({ format: 'email', maxLength: 320, error: 'Invalid email' })),
  context: t.Optional(t.Record(t.String(), t.Unknown(), { error: 'context must be an object' })),
})
export type StartExecution = Static<typeof StartExecution>

export const StepExecution = t.Object({
  id: t.String(),
  stepId: t.String(),
  stepType: t.String(),
  status: t.String({ description: STEP_EXECUTION_STATUSES.join(', ') }),
  output: t.Union([t.Record(t.String(), t.Unknown()), t.Null()]),
  error: t.Union([t.String(), t.Null()]),
  dueAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  startedAt: t.String({ format: 'date-time' }),
  finishedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
})
export type StepExecution = Static<typeof StepExecution>

export const Execution = t.Object({
  id: t.String(),
  workflowId: t.String(),
  contactId: t.String(),
  status: t.String({ description: EXECUTION_STATUSES.join(', ') }),
  currentStepId: t.Union([t.String(), t.Null()]),
  context: t.Record(t.String(), t.Unknown()),
  triggerEventId: t.Union([t.String(), t.Null()]),
  waitingFor: t.Union([t.Object({ eventName: t.Union([t.String(), t.Null()]), until: t.Union([t.String({ format: 'date-time' }), t.Null()]) }), t.Null()]),
  error: t.Union([t.String(), t.Null()]),
  exitReason: t.Union([t.String(), t.Null()]),
  startedAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
  finishedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  steps: t.Optional(t.Array(StepExecution)),
})
export type Execution = Static<typeof Execution>

export const ListWorkflowsQuery = t.Object({
  page: positiveIntQuery('page', '1 to 1000000, default 1', 1_000_000),
  pageSize: positiveIntQuery('pageSize', `1 up, default ${DEFAULT_PAGE_SIZE}; values above ${MAX_PAGE_SIZE} are clamped`),
  search: t.Optional(t.String({ maxLength: 200, description: 'Case-insensitive substring of the name' })),
  enabled: t.Optional(t.Union([t.Literal('true'), t.Literal('false')], { error: 'enabled must be true or false' })),
})
export type ListWorkflowsQuery = Static<typeof ListWorkflowsQuery>

export const WorkflowList = t.Object({
  data: t.Array(WorkflowSummary), page: t.Integer(), pageSize: t.Integer(), total: t.Integer(), totalPages: t.Integer(),
})
export type WorkflowList = Static<typeof WorkflowList>

export const ListExecutionsQuery = t.Object({
  status: t.Optional(t.String({ description: `${EXECUTION_STATUSES.join(', ')}; any other value answers 400` })),
  limit: positiveIntQuery('limit', '1 up, default 20; values above 100 are clamped'),
  cursor: t.Optional(t.String({ maxLength: 200 })),
})
export type ListExecutionsQuery = Static<typeof ListExecutionsQuery>

export const ExecutionList = t.Object({
  data: t.Array(Execution), cursor: t.String(), hasMore: t.Boolean(), total: t.Integer(),
})
export type ExecutionList = Static<typeof ExecutionList>

export const CancelAllResult = t.Object({ cancelled: t.Integer() })

export const StepStats = t.Object({
  data: t.Array(t.Object({
    stepId: t.String(),
    entered: t.Integer({ description: 'Step executions of the step: each time an execution reached it' }),
    waiting: t.Integer({ description: 'Executions WAITING at the step now (a DELAY or WAIT_FOR_EVENT)' }),
    completed: t.Integer({ description: 'Step executions COMPLETED' }),
    failed: t.Integer({ description: 'Step executions FAILED' }),
  })),
}, { description: 'Per step of the workflow (every step, zeros included), counted over all its executions' })
export type StepStats = Static<typeof StepStats>

export const FieldsResult = t.Object({
  contact: t.Array(t.Object({ field: t.String(), label: t.String(), kind: t.String(), operators: t.Array(t.String()) }, { additionalProperties: true })),
  event: t.Array(t.Object({ field: t.String(), label: t.String(), kind: t.String(), operators: t.Array(t.String()) }, { additionalProperties: true })),
})

export const IdParams = t.Object({ id: t.String() })
export const StepParams = t.Object({ id: t.String(), stepId: t.String() })
export const TransitionParams = t.Object({ id: t.String(), transitionId: t.String() })
export const ExecutionParams = t.Object({ id: t.String(), executionId: t.String() })
export const DeleteStepQuery = t.Object({
  splice: t.Optional(t.Union([t.Literal('true'), t.Literal('false')], { error: 'splice must be true or false' })),
})
