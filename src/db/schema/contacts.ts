import type { Cols } from '../columns'

/** Uploaded CSV files waiting for (or being processed by) their import job; removed when the job ends. */
export function contactTables(c: Cols) {
  const contactImports = c.table('contact_imports', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    filename: c.text('filename').notNull(),
    size: c.int('size').notNull(),
    content: c.bytes('content').notNull(),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [c.index('contact_imports_project_idx').on(t.projectId)])
  return { contactImports }
}
