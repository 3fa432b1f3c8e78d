import {
  EMAIL_ACTIVITY_EVENTS, MAX_DATA_KEY, MAX_DATA_PATH_SEGMENTS, MAX_EVENT_NAME, type DateColumn, type EmailActivityField,
  type Operator,
} from './types'

/**
 * The fields a filter can name (docs/decisions.md, Filters): email, subscribed, createdAt, updatedAt, data.<dotted.path>,
 * event.<name>, email.opened / email.clicked / email.bounced, segment.<id>; and the operators each kind takes.
 */
export type FieldKind = 'email' | 'subscribed' | 'date' | 'data' | 'event' | 'emailActivity' | 'segment'

export type ParsedField =
  | { kind: 'email' }
  | { kind: 'subscribed' }
  | { kind: 'date'; column: DateColumn }
  | { kind: 'data'; path: string[] }
  | { kind: 'event'; name: string }
  | { kind: 'emailActivity'; field: EmailActivityField; event: string }
  | { kind: 'segment'; segmentId: string }

const EVENT_OPS: Operator[] = ['triggered', 'notTriggered', 'triggeredWithin', 'notTriggeredWithin', 'triggeredMoreThan']

/** Operators accepted per field kind; anything else is a 422 naming these. */
export const OPERATORS_BY_KIND: Record<FieldKind, readonly Operator[]> = {
  email: ['equals', 'notEquals', 'contains', 'notContains'],
  subscribed: ['equals', 'notEquals'],
  date: ['equals', 'notEquals', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'within', 'olderThan'],
  data: [
    'equals', 'notEquals', 'contains', 'notContains', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual',
    'exists', 'notExists', 'within', 'olderThan',
  ],
  event: EVENT_OPS,
  emailActivity: [...EVENT_OPS, 'equals', 'notEquals'],
  segment: ['memberOfSegment', 'notMemberOfSegment'],
}

/** Parses a field name; a string saying what is wrong when it is not a field. */
export function parseField(field: string): ParsedField | string {
  if (field.includes('\u0000')) return 'a field name cannot contain a NUL character'
  switch (field) {
    case 'email': return { kind: 'email' }
    case 'subscribed': return { kind: 'subscribed' }
    case 'createdAt': return { kind: 'date', column: 'created_at' }
    case 'updatedAt': return { kind: 'date', column: 'updated_at' }
  }
  if (field in EMAIL_ACTIVITY_EVENTS) {
    const f = field as EmailActivityField
    return { kind: 'emailActivity', field: f, event: EMAIL_ACTIVITY_EVENTS[f] }
  }
  if (field.startsWith('data.')) {
    const path = field.slice(5).split('.')
    if (path.some((k) => k.length === 0)) return 'a data field is data.<key>, with dots only between non-empty keys'
    if (path.length > MAX_DATA_PATH_SEGMENTS) return `a data path has at most ${MAX_DATA_PATH_SEGMENTS} keys`
    if (path.some((k) => k.length > MAX_DATA_KEY)) return `a data key has at most ${MAX_DATA_KEY} characters`
    // biome-ignore lint/suspicious/noControlCharactersInRegex: data keys refuse the C0 control characters, which this range names
    if (path.some((k) => /[\u0000-\u001f]/.test(k))) return 'a data key cannot contain control characters'
    return { kind: 'data', path }
  }
  if (field.startsWith('event.')) {
    const name = field.slice(6)
    if (!name.length) return 'an event field is event.<name>'
    if (name.length > MAX_EVENT_NAME) return `an event name has at most ${MAX_EVENT_NAME} characters`
    return { kind: 'event', name }
  }
  if (field.startsWith('segment.')) {
    const segmentId = field.slice(8)
    if (!segmentId.length || segmentId.length > 64) return 'a segment field is segment.<id>'
    return { kind: 'segment', segmentId }
  }
  return 'unknown field; expected email, subscribed, createdAt, updatedAt, data.<key>, event.<name>, email.opened, email.clicked, email.bounced or segment.<id>'
}

/** One entry of the field catalogue (GET /workflows/fields, the dashboard's filter builder). */
export interface FieldInfo {
  field: string
  label: string
  kind: FieldKind
  /** For data fields: the JSON types seen on contacts (string, number, boolean, date, object). */
  types?: string[]
  operators: readonly Operator[]
}

/** The fields every project has (contact columns and the email activity fields). */
export function standardFields(): FieldInfo[] {
  return [
    { field: 'email', label: 'Email', kind: 'email', operators: OPERATORS_BY_KIND.email },
    { field: 'subscribed', label: 'Subscribed', kind: 'subscribed', operators: OPERATORS_BY_KIND.subscribed },
    { field: 'createdAt', label: 'Created at', kind: 'date', operators: OPERATORS_BY_KIND.date },
    { field: 'updatedAt', label: 'Updated at', kind: 'date', operators: OPERATORS_BY_KIND.date },
    { field: 'email.opened', label: 'Opened an email', kind: 'emailActivity', operators: OPERATORS_BY_KIND.emailActivity },
    { field: 'email.clicked', label: 'Clicked a link in an email', kind: 'emailActivity', operators: OPERATORS_BY_KIND.emailActivity },
    { field: 'email.bounced', label: 'An email bounced', kind: 'emailActivity', operators: OPERATORS_BY_KIND.emailActivity },
  ]
}
