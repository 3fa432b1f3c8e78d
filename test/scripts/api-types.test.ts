/**
 * The dashboard's generated API types (scripts/api-types.ts): web/api-schema.ts is what the routes give
 * now, so a route changed without generating the file again fails here (and in `npm run typecheck`); and a
 * change of an answer's schema does change the generated text, so the comparison can fail.
 */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { openApiJson, SCHEMA_FILE, schemaSource } from '../../scripts/api-types'

type Json = Record<string, unknown>
const doc = await openApiJson()
const generated = await schemaSource(doc)

test('web/api-schema.ts is what the routes give now (run `bun scripts/api-types.ts` after changing a route)', async () => {
  expect(readFileSync(SCHEMA_FILE, 'utf8')).toBe(generated)
}, 60_000)

test('a field removed from an answer changes the generated types; the document is built without a server', async () => {
  const copy = structuredClone(doc) as { paths: Record<string, Record<string, Json>> }
  type Answer = { content: Record<string, { schema: { properties: Json; required: string[] } }> }
  const responses = (copy.paths['/contacts/{id}']?.get?.responses ?? {}) as Record<string, Answer | undefined>
  const schema = responses['200']?.content['application/json']?.schema
  if (!schema) throw new Error('GET /contacts/{id} has no JSON answer in the document')
  expect(schema.properties).toHaveProperty('subscribed')
  delete schema.properties.subscribed
  schema.required = schema.required.filter((k) => k !== 'subscribed')
  const before = generated
  const after = await schemaSource(copy)
  expect(after).not.toBe(before)
  // The contact's answer in the generated text loses the field; the file tsc reads would no longer offer it.
  const contact = (text: string) => text.slice(text.indexOf('    getContactsById: {'), text.indexOf('    deleteContactsById: {'))
  expect(contact(before)).toContain('subscribed: boolean;')
  expect(contact(after)).not.toContain('subscribed: boolean;')
}, 60_000)
