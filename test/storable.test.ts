import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore } from './helpers/env'
import { ctxFor } from '../src/deps'
import { cutText, isStorableText, storableCopy } from '../src/storable'
import { suppress } from '../src/modules/suppressions/service'

test('cutText never leaves half of a surrogate pair at the cut', () => {
  const emojiAtEnd = `${'a'.repeat(999)}\u{1F600}`
  expect(emojiAtEnd.slice(0, 1000).length).toBe(1000)
  expect(isStorableText(emojiAtEnd.slice(0, 1000))).toBe(false)
  expect(cutText(emojiAtEnd, 1000)).toBe('a'.repeat(999))
  expect(cutText(emojiAtEnd, 1001)).toBe(emojiAtEnd)
  expect(cutText(`${'a'.repeat(998)}\u{1F600}b`, 1000)).toBe(`${'a'.repeat(998)}\u{1F600}`)
  expect(cutText('short', 1000)).toBe('short')
  for (let n = 1; n <= 8; n++) expect(isStorableText(cutText('\u{1F600}\u{1F601}\u{1F602}\u{1F603}', n))).toBe(true)
})

test('storableCopy keeps a "__proto__" key read from JSON as a key', () => {
  const parsed = JSON.parse('{"__proto__": {"x": "a\\u0000b"}, "y": 1}') as Record<string, unknown>
  const copy = storableCopy(parsed)
  expect(Object.keys(copy)).toEqual(['__proto__', 'y'])
  expect(JSON.stringify(copy)).toBe('{"__proto__":{"x":"a\uFFFDb"},"y":1}')
  expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
})

forEachStore('text cut to a column\'s limit', (env) => {
  test('a suppression\'s detail cut at 2,000 units with an emoji across the limit is stored whole-charactered', async () => {
    const p = await env.project()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const detail = `${'d'.repeat(1999)}\u{1F600} and more`
    await env.store.tx((db) => suppress(ctx, db, { email: 'cut@example.com', reason: 'bounce', detail }))
    const [row] = await env.store.rows<{ detail: string }>(sql`SELECT detail FROM suppressions WHERE project_id = ${p.id}`)
    expect(row.detail).toBe('d'.repeat(1999))
  })
})
