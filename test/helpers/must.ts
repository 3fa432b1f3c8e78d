/**
 * The value itself, or an error naming what is missing: narrows `T | null | undefined` in a test where the
 * value's presence is a precondition of what the test asserts next.
 */
export function must<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new Error(`expected ${what}, got ${value}`)
  return value
}
