/**
 * The contacts repositories (this folder holds the only SQL of the contacts module, with search/; every
 * function takes the project id):
 * - contact.ts: one contact or a set of them by id or email: the upsert hot path, edits, deletes;
 * - list.ts: pages, counts and searches;
 * - fields.ts: the custom fields (the keys of contacts.data);
 * - imports.ts: CSV uploads awaiting their import job.
 * This file: the row as the module sees it, and the raw rows the stores return.
 */

export type ContactRow = typeof import('../../../db/schema').pgSchema.contacts.$inferSelect

/** A contacts row as bun:sqlite returns it. */
export interface RawContact { id: string; project_id: string; email: string; subscribed: number; data: string; created_at: number; updated_at: number }

/** A contacts row as postgres.js returns it. */
export interface PgContact { id: string; project_id: string; email: string; subscribed: boolean; data: Record<string, unknown>; created_at: Date | string; updated_at: Date | string }

export const CONTACT_COLS = 'id, project_id, email, subscribed, data, created_at, updated_at'

export function fromRaw(r: RawContact): ContactRow {
  return {
    id: r.id, projectId: r.project_id, email: r.email, subscribed: r.subscribed === 1, data: JSON.parse(r.data) as Record<string, unknown>,
    createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
  }
}

export function fromPg(r: PgContact): ContactRow {
  return {
    id: r.id, projectId: r.project_id, email: r.email, subscribed: r.subscribed, data: r.data,
    createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
  }
}

/** LIKE pattern for a case-insensitive substring (emails are stored lower-cased). */
export function likePattern(term: string): string {
  return `%${term.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`
}
