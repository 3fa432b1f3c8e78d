import { sql, type SQL } from 'drizzle-orm'
import type { AnyColumn } from 'drizzle-orm'

/**
 * Email states (docs/decisions.md, States): PENDING -> SENDING -> SENT -> DELIVERED -> OPENED -> CLICKED, or
 * BOUNCED / COMPLAINED / FAILED. Status only moves forward: a late or reordered notification (an open
 * recorded after a complaint, a relay's delivery report after a bounce) never moves it back.
 */
export const EMAIL_STATUSES = ['PENDING', 'SENDING', 'SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'BOUNCED', 'COMPLAINED', 'FAILED'] as const
export type EmailStatus = (typeof EMAIL_STATUSES)[number]

export const statusRank = (s: string): number => EMAIL_STATUSES.indexOf(s as EmailStatus)

/** The status that results from `current` receiving `next`: the later of the two. */
export function advance(current: EmailStatus, next: EmailStatus): EmailStatus {
  return statusRank(next) > statusRank(current) ? next : current
}

/** SQL for `status = advance(status, next)` on the given column (same rule, in the database). */
export function advanceSql(column: AnyColumn, next: EmailStatus): SQL {
  // Constants from EMAIL_STATUSES only, inlined so that both stores compare integers.
  const rank = EMAIL_STATUSES.map((s, i) => `WHEN '${s}' THEN ${i}`).join(' ')
  return sql`CASE WHEN (CASE ${column} ${sql.raw(rank)} ELSE -1 END) < ${sql.raw(String(statusRank(next)))} THEN ${sql.raw(`'${next}'`)} ELSE ${column} END`
}
