/**
 * The filter tree of the public API with the operators, units and fields of docs/decisions.md (Filters)
 * ("Segment and audience filters"). One engine serves segments, campaign audiences, workflow CONDITION
 * steps and GET /workflows/fields.
 */

export const LOGICS = ['AND', 'OR'] as const
export type Logic = (typeof LOGICS)[number]

export const UNITS = ['minutes', 'hours', 'days'] as const
export type Unit = (typeof UNITS)[number]
export const UNIT_MS: Record<Unit, number> = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 }

export const OPERATORS = [
  'equals', 'notEquals', 'contains', 'notContains',
  'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual',
  'exists', 'notExists', 'within', 'olderThan',
  'triggered', 'notTriggered', 'triggeredWithin', 'notTriggeredWithin', 'triggeredMoreThan',
  'memberOfSegment', 'notMemberOfSegment',
] as const
export type Operator = (typeof OPERATORS)[number]

/** A filter as clients send it. */
export interface Filter {
  field: string
  operator: string
  value?: unknown
  unit?: string
}

export interface FilterGroup {
  filters?: Filter[]
  /** A nested tree, ANDed with the group's filters. */
  conditions?: FilterTree
}

/** `logic` joins the groups; a group ANDs its filters and its nested `conditions`. */
export interface FilterTree {
  logic?: string
  groups: FilterGroup[]
}

/** Deepest nesting of trees (the root is depth 1; each `conditions` adds one). */
export const MAX_DEPTH = 5
/** Filters in one tree, all levels together (keeps the compiled query bounded). */
export const MAX_FILTERS = 100
/** Segment references followed through other segments' conditions. */
export const MAX_SEGMENT_DEPTH = 5
export const MAX_STRING_VALUE = 1000
export const MAX_DATA_PATH_SEGMENTS = 10
export const MAX_DATA_KEY = 255
export const MAX_EVENT_NAME = 255
/** Largest time window: 100 years. */
export const MAX_WINDOW_MS = 100 * 365 * UNIT_MS.days

/** The comparable form of a filter value: numbers compare as numbers, dates as dates. */
export type Comparable =
  | { type: 'number'; n: number }
  /** `dayOnly`: the value was a date without time (YYYY-MM-DD); equality then means "that UTC day". */
  | { type: 'date'; ms: number; dayOnly: boolean }
  | { type: 'string'; s: string }
  | { type: 'boolean'; b: boolean }

/** Which contact column a date filter reads. */
export type DateColumn = 'created_at' | 'updated_at'

/** The service's email events that email.opened / clicked / bounced read on the event stream. */
export const EMAIL_ACTIVITY_EVENTS = {
  'email.opened': 'email.open',
  'email.clicked': 'email.click',
  'email.bounced': 'email.bounce',
} as const
export type EmailActivityField = keyof typeof EMAIL_ACTIVITY_EVENTS

/** A validated filter, in the form the compiler reads. */
export type Predicate =
  | { kind: 'email'; op: 'equals' | 'notEquals' | 'contains' | 'notContains'; value: string }
  | { kind: 'subscribed'; op: 'equals' | 'notEquals'; value: boolean }
  | { kind: 'column-date'; column: DateColumn; op: CompareOp; value: Comparable & { type: 'date' } }
  | { kind: 'column-window'; column: DateColumn; op: 'within' | 'olderThan'; windowMs: number }
  | { kind: 'data'; path: string[]; op: 'equals' | 'notEquals'; value: Comparable }
  | { kind: 'data'; path: string[]; op: 'contains' | 'notContains'; value: Comparable & { type: 'string' } }
  | { kind: 'data'; path: string[]; op: CompareOp; value: Comparable & { type: 'number' | 'date' } }
  | { kind: 'data'; path: string[]; op: 'exists' | 'notExists' }
  | { kind: 'data-window'; path: string[]; op: 'within' | 'olderThan'; windowMs: number }
  | { kind: 'event'; name: string; op: 'triggered' | 'notTriggered' }
  | { kind: 'event'; name: string; op: 'triggeredWithin' | 'notTriggeredWithin'; windowMs: number }
  | { kind: 'event'; name: string; op: 'triggeredMoreThan'; count: number }
  | { kind: 'segment'; segmentId: string; op: 'memberOfSegment' | 'notMemberOfSegment' }

export type CompareOp = 'equals' | 'notEquals' | 'greaterThan' | 'lessThan' | 'greaterThanOrEqual' | 'lessThanOrEqual'

/** A validated tree. */
export interface CheckedTree {
  logic: Logic
  groups: Array<{ predicates: Predicate[]; conditions: CheckedTree | null }>
}
