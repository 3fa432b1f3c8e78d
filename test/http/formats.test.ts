/**
 * The request formats in force once the HTTP app is loaded are src/http/formats.ts's compiled patterns, not
 * the zod checks @elysiajs/openapi registers when its module is evaluated (those build a zod schema per
 * validated value: 13 % of POST /v1/track's main thread on PostgreSQL).
 */
import { expect, test } from 'bun:test'
import { FormatRegistry } from '@sinclair/typebox'
import { FORMATS } from '../../src/http/formats'
import '../../src/http/app'

test('after the app and the OpenAPI plugin are loaded, email and uuid are checked by our compiled patterns', async () => {
  await import('@elysiajs/openapi')
  expect(FormatRegistry.Get('email')).toBe(FORMATS.email)
  expect(FormatRegistry.Get('uuid')).toBe(FORMATS.uuid)
})

test('the patterns accept and refuse what zod does', () => {
  expect(FORMATS.email('ada@example.com')).toBe(true)
  expect(FORMATS.email("o'brien+tag@mail.example.co.uk")).toBe(true)
  expect(FORMATS.email('ada@example.c')).toBe(false)
  expect(FORMATS.email('.ada@example.com')).toBe(false)
  expect(FORMATS.email('ada..b@example.com')).toBe(false)
  expect(FORMATS.email(42)).toBe(false)
  expect(FORMATS.uuid('01a220b9-7471-7756-bcc5-165fdd126574')).toBe(true)
  expect(FORMATS.uuid('01a220b9-7471-9756-bcc5-165fdd126574')).toBe(false)
  expect(FORMATS.uuid('not-a-uuid')).toBe(false)
})
