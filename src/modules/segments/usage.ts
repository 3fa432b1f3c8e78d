import type { Ctx } from '../../deps'

/**
 * Who uses a segment, so that deleting it answers 409 (docs/decisions.md, Segments: "deleting a segment used by an active
 * campaign returns 409"). Each module that references segments exports a check, and the composition root
 * (`wireConsumers` in src/main.ts) registers it:
 *
 *   registerSegmentUser({ kind: 'campaigns', usersOf: (ctx, segmentId) => activeCampaignsUsing(ctx, segmentId) })
 *
 * The campaigns module (not built yet) plugs in here: its check should list the campaigns whose
 * audience is this segment and whose status is active (SCHEDULED or SENDING). The segments module has
 * its own check: other segments whose condition refers to this one (segment.<id>).
 */
export interface SegmentUserRef { kind: string; id: string; name: string }

export interface SegmentUser {
  kind: string
  usersOf(ctx: Ctx, segmentId: string): Promise<Array<{ id: string; name: string }>>
}

const users: SegmentUser[] = []

/** Registers a check; returns a function that removes it (tests). */
export function registerSegmentUser(u: SegmentUser): () => void {
  users.push(u)
  return () => { const i = users.indexOf(u); if (i >= 0) users.splice(i, 1) }
}

/** Everything that uses the segment now, from every registered check. */
export async function segmentUsers(ctx: Ctx, segmentId: string): Promise<SegmentUserRef[]> {
  const out: SegmentUserRef[] = []
  for (const u of users) for (const r of await u.usersOf(ctx, segmentId)) out.push({ kind: u.kind, id: r.id, name: r.name })
  return out
}
