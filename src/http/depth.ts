/**
 * A request body nested thousands of levels deep parses (JSON.parse does not recurse), but then overflows
 * the stack of whatever walks it recursively: schema validation, its error messages, JSON.stringify of the
 * Idempotency-Key hash or of the error's echoed value. Such a body is refused right after parsing.
 */

/** Levels of objects and arrays a JSON body may nest, the body itself being the first (no route needs 20). */
export const MAX_BODY_DEPTH = 64

/**
 * Where `body` nests objects and arrays deeper than `max` levels: the top-level key of the first branch
 * that does ('' when the body is an array), or null when none does. Iterative, so any depth is safe.
 */
export function tooDeepBranch(body: object, max = MAX_BODY_DEPTH): string | null {
  const values: object[] = []
  const depths: number[] = []
  const tops: string[] = []
  const visit = (v: object, depth: number, top: string) => {
    if (Array.isArray(v)) {
      for (const x of v) if (x !== null && typeof x === 'object') { values.push(x); depths.push(depth + 1); tops.push(top) }
    } else {
      for (const k in v) {
        const x = (v as Record<string, unknown>)[k]
        if (x !== null && typeof x === 'object') { values.push(x); depths.push(depth + 1); tops.push(depth === 1 ? k : top) }
      }
    }
  }
  visit(body, 1, '')
  for (let depth = depths.pop(); depth !== undefined; depth = depths.pop()) {
    const v = values.pop() as object
    const top = tops.pop() as string
    if (depth > max) return top
    visit(v, depth, top)
  }
  return null
}
