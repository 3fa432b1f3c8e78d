import { count, eq, sql } from 'drizzle-orm'
import type { Db, Store } from '../../../db/client'
import { likePattern } from './rows'

/** Custom fields: the keys of contacts.data, their kinds and values. */

export type FieldKind = 'string' | 'number' | 'boolean' | 'date' | 'object' | 'array' | 'null'

/** (key, kind, contacts) for every key of every contact's data. Strings that start like an ISO date are 'date'. */
export async function fieldKinds(store: Store, projectId: string): Promise<Array<{ key: string; kind: FieldKind; n: number }>> {
  // dialect: jsonb_each and jsonb_typeof against json_each's type column
  const rows = store.dialect === 'pg'
    ? await store.rows<{ key: string; kind: FieldKind; n: number | string }>(sql`
        SELECT e.key AS key,
          CASE jsonb_typeof(e.value)
            WHEN 'string' THEN CASE WHEN (e.value #>> '{}') ~ '^\\d{4}-\\d{2}-\\d{2}([T ]\\d{2}:\\d{2}|$)' THEN 'date' ELSE 'string' END
            ELSE jsonb_typeof(e.value) END AS kind,
          count(*) AS n
        FROM contacts c, jsonb_each(c.data) e
        WHERE c.project_id = ${projectId}
        GROUP BY 1, 2`)
    : await store.rows<{ key: string; kind: FieldKind; n: number }>(sql`
        SELECT j.key AS key,
          CASE
            WHEN j.type IN ('true', 'false') THEN 'boolean'
            WHEN j.type IN ('integer', 'real') THEN 'number'
            WHEN j.type = 'text' AND (j.value GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
              OR j.value GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:[0-9][0-9]*') THEN 'date'
            WHEN j.type = 'text' THEN 'string'
            ELSE j.type END AS kind,
          count(*) AS n
        FROM contacts c, json_each(c.data) j
        WHERE c.project_id = ${projectId}
        GROUP BY 1, 2`)
  return rows.map((r) => ({ key: r.key, kind: r.kind, n: Number(r.n) }))
}

/** How many contacts of the project have the key `field` in their data. */
export async function fieldCount(store: Store, projectId: string, field: string): Promise<number> {
  // dialect: jsonb's -> operator against json_each
  const [row] = store.dialect === 'pg'
    ? await store.rows<{ n: string | number }>(sql`SELECT count(*) AS n FROM contacts WHERE project_id = ${projectId} AND (data -> ${field}::text) IS NOT NULL`)
    : await store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contacts c WHERE c.project_id = ${projectId} AND EXISTS (SELECT 1 FROM json_each(c.data) j WHERE j.key = ${field})`)
  return Number(row?.n ?? 0)
}

/** Distinct values of a custom field with their counts, most frequent first. */
export async function fieldValues(store: Store, projectId: string, field: string, limit: number, search?: string): Promise<{ values: Array<{ value: unknown; count: number }>; distinct: number }> {
  // dialect: jsonb's -> and ILIKE against json_each and LIKE
  if (store.dialect === 'pg') {
    const filter = search ? sql` AND (data ->> ${field}::text) ILIKE ${likePattern(search)} ESCAPE '\\'` : sql``
    const rows = await store.rows<{ value: unknown; n: string | number }>(sql`
      SELECT data -> ${field}::text AS value, count(*) AS n FROM contacts
      WHERE project_id = ${projectId} AND (data -> ${field}::text) IS NOT NULL${filter}
      GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ${limit}`)
    const [d] = await store.rows<{ n: string | number }>(sql`
      SELECT count(DISTINCT data -> ${field}::text) AS n FROM contacts
      WHERE project_id = ${projectId} AND (data -> ${field}::text) IS NOT NULL${filter}`)
    return { values: rows.map((r) => ({ value: r.value, count: Number(r.n) })), distinct: Number(d?.n ?? 0) }
  }
  const filter = search ? sql` AND CAST(j.value AS TEXT) LIKE ${likePattern(search)} ESCAPE '\\'` : sql``
  const rows = await store.rows<{ value: unknown; type: string; n: number }>(sql`
    SELECT j.value AS value, j.type AS type, count(*) AS n
    FROM contacts c, json_each(c.data) j
    WHERE c.project_id = ${projectId} AND j.key = ${field}${filter}
    GROUP BY j.type, j.value ORDER BY 3 DESC, 1 LIMIT ${limit}`)
  const [d] = await store.rows<{ n: number }>(sql`
    SELECT count(*) AS n FROM (SELECT 1 FROM contacts c, json_each(c.data) j
      WHERE c.project_id = ${projectId} AND j.key = ${field}${filter} GROUP BY j.type, j.value)`)
  const decode = (value: unknown, type: string): unknown => {
    if (type === 'true') return true
    if (type === 'false') return false
    if (type === 'object' || type === 'array') return JSON.parse(String(value))
    return value
  }
  return { values: rows.map((r) => ({ value: decode(r.value, r.type), count: Number(r.n) })), distinct: Number(d?.n ?? 0) }
}

/** Counts of subscribed true/false (the one standard field with a useful value list). */
export async function subscribedValues(store: Store, projectId: string): Promise<Array<{ value: boolean; count: number }>> {
  const c = store.t.contacts
  const rows = await store.db.select({ value: c.subscribed, n: count() }).from(c).where(eq(c.projectId, projectId)).groupBy(c.subscribed)
  return rows.map((r) => ({ value: Boolean(r.value), count: Number(r.n) })).sort((a, b) => b.count - a.count)
}

/** Removes `field` from the data of every contact of the project; returns how many contacts changed. */
export async function deleteField(store: Store, db: Db, projectId: string, field: string, now: Date): Promise<number> {
  // dialect: jsonb's - operator against json_remove
  if (store.dialect === 'pg') {
    const rows = await store.rows<{ id: string }>(sql`
      UPDATE contacts SET data = data - ${field}::text, updated_at = ${now.toISOString()}
      WHERE project_id = ${projectId} AND (data -> ${field}::text) IS NOT NULL RETURNING id`, db)
    return rows.length
  }
  const has = sql`EXISTS (SELECT 1 FROM json_each(contacts.data) j WHERE j.key = ${field})`
  if (!/["\\]/.test(field)) {
    // A quoted JSON path label addresses any key without a double quote or backslash.
    const rows = await store.rows<{ id: string }>(sql`
      UPDATE contacts SET data = json_remove(data, ${`$."${field}"`}), updated_at = ${now.getTime()}
      WHERE project_id = ${projectId} AND ${has} RETURNING id`, db)
    return rows.length
  }
  const rows = await store.rows<{ id: string; data: string }>(sql`SELECT id, data FROM contacts WHERE project_id = ${projectId} AND ${has}`, db)
  for (const r of rows) {
    const data = JSON.parse(r.data) as Record<string, unknown>
    delete data[field]
    await store.exec(sql`UPDATE contacts SET data = ${JSON.stringify(data)}, updated_at = ${now.getTime()} WHERE id = ${r.id}`, db)
  }
  return rows.length
}

function hasField(store: Store, field: string) {
  // dialect: jsonb's -> operator against json_each
  return store.dialect === 'pg'
    ? sql`(contacts.data -> ${field}::text) IS NOT NULL`
    : sql`EXISTS (SELECT 1 FROM json_each(contacts.data) j WHERE j.key = ${field})`
}

/** Ids of the project's contacts that hold `field`, in id order after `afterId` (rename and retype walk them). */
export async function idsWithField(store: Store, db: Db, projectId: string, field: string, afterId: string, limit: number): Promise<string[]> {
  const rows = await store.rows<{ id: string }>(sql`SELECT id FROM contacts WHERE project_id = ${projectId} AND id > ${afterId} AND ${hasField(store, field)} ORDER BY id LIMIT ${limit}`, db)
  return rows.map((r) => r.id)
}

/** Distinct values of `field` with their counts, every one (a retype classifies them). */
export async function allFieldValues(store: Store, projectId: string, field: string): Promise<Array<{ value: unknown; count: number }>> {
  const r = await fieldValues(store, projectId, field, Number.MAX_SAFE_INTEGER)
  return r.values
}
