/**
 * The event types the activity feed lists (GET /activity) and counts per project and hour in
 * `activity_counts`. A module of its own, without imports: the track writer thread inserts events too.
 */
export const COUNTED_EVENT_TYPES = [
  'email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received', 'contact.subscribed', 'contact.unsubscribed',
] as const

const counted: ReadonlySet<string> = new Set(COUNTED_EVENT_TYPES)

/** Whether events named `name` are counted in `activity_counts`. */
export const isCountedEvent = (name: string): boolean => counted.has(name)

/** The counters' hour of an event at epoch ms `at` (the start of its UTC hour, as the triggers compute it). */
export const activityHour = (at: number): number => Math.floor(at / 3_600_000) * 3_600_000
