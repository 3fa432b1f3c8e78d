import type { Cols } from '../columns'
import type { FilterTree } from '../../filters/types'

/** Segments: definitions, and member rows (STATIC lists, tracked DYNAMIC membership). */
export function segmentTables(c: Cols) {
  const segments = c.table('segments', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    name: c.text('name').notNull(),
    /** Fixed at creation, unique in the project: the `<slug>` of segment.<slug>.entry / .exit events. */
    slug: c.text('slug').notNull(),
    description: c.text('description'),
    type: c.text('type').$type<'DYNAMIC' | 'STATIC'>().notNull(),
    /** The filter tree of a DYNAMIC segment; null for STATIC. */
    condition: c.json<FilterTree>('condition'),
    trackMembership: c.bool('track_membership').notNull(),
    memberCount: c.int('member_count').notNull(),
    /** When memberCount was last counted. */
    countedAt: c.ts('counted_at'),
    /** When the membership rows of a tracked segment were last computed. */
    computedAt: c.ts('computed_at'),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [
    c.uniqueIndex('segments_project_slug_uq').on(t.projectId, t.slug),
    c.index('segments_project_created_idx').on(t.projectId, t.createdAt, t.id),
  ])

  const segmentMembers = c.table('segment_members', {
    segmentId: c.text('segment_id').notNull(),
    contactId: c.text('contact_id').notNull(),
    projectId: c.text('project_id').notNull(),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [
    c.primaryKey({ columns: [t.segmentId, t.contactId] }),
    c.index('segment_members_contact_idx').on(t.contactId),
  ])

  return { segments, segmentMembers }
}
