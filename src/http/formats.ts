import { FormatRegistry } from '@sinclair/typebox'

/**
 * String formats of request validation. @elysiajs/openapi, when its module is evaluated, re-registers
 * TypeBox's formats as zod checks that build a new zod schema on every call (`string().email()` per
 * validated value): about a quarter of a millisecond per email checked, and 13 % of the main thread's CPU
 * of POST /v1/track. These are zod's own patterns, compiled once, so what is accepted does not change.
 * `registerFormats` runs when this module is evaluated (the CLI's services) and again in src/http/app.ts's
 * body, which runs after every module it imports, the OpenAPI plugin included: the order of evaluation
 * cannot hand the formats back to the plugin.
 */
const ZOD_EMAIL = /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/
const ZOD_UUID = /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$/

export const FORMATS: Readonly<Record<'email' | 'uuid', (value: unknown) => boolean>> = {
  email: (value) => typeof value === 'string' && ZOD_EMAIL.test(value),
  uuid: (value) => typeof value === 'string' && ZOD_UUID.test(value),
}

export function registerFormats(): void {
  for (const [name, check] of Object.entries(FORMATS)) FormatRegistry.Set(name, check)
}

registerFormats()
