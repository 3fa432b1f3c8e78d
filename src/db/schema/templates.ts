import type { Cols } from '../columns'

/** Email templates (docs/decisions.md, Templates): Handlebars subject and HTML body, sender fields and a type. */
export function templateTables(c: Cols) {
  const templates = c.table('templates', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    name: c.text('name').notNull(),
    description: c.text('description'),
    subject: c.text('subject').notNull(),
    body: c.text('body').notNull(),
    /** The dashboard editor's document that produced `body`; NULL for a body written as HTML. */
    design: c.json<Record<string, unknown>>('design'),
    /** Inbox preview text; also a hidden block at the top of `body`. */
    preheader: c.text('preheader'),
    /** Lower-cased sender address; its domain was verified when it was saved. */
    fromEmail: c.text('from_email').notNull(),
    fromName: c.text('from_name'),
    replyTo: c.text('reply_to'),
    /** TRANSACTIONAL | MARKETING | HEADLESS */
    type: c.text('type').notNull(),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [
    c.index('templates_project_created_idx').on(t.projectId, t.createdAt, t.id),
    c.index('templates_project_updated_idx').on(t.projectId, t.updatedAt, t.id),
    c.index('templates_project_type_idx').on(t.projectId, t.type, t.createdAt),
  ])
  return { templates }
}
