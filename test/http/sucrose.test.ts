import { expect, test } from 'bun:test'
import { clearSucroseCache, sucrose } from 'elysia/sucrose'
import { forEachStore } from '../helpers/env'
import { buildApp } from '../../src/http/app'

/**
 * Issue 18, defect 11: Elysia's Sucrose reads each handler's and hook's source (Function#toString) to see
 * which context fields it uses. In the minified binary a hook written as a method (`transform({ body }) {`)
 * has no line break, Sucrose takes the whole body for the parameter list, builds a regex of it, and prints a
 * non-JSON "[Sucrose] warning" with the source on the first request that compiles the route. This runs
 * Sucrose over every function of every route as minification leaves it (one line) and expects no warning.
 */

const LIFECYCLES = ['request', 'parse', 'transform', 'beforeHandle', 'afterHandle', 'mapResponse', 'afterResponse', 'error'] as const

const ARROW_OR_FUNCTION = /^(async\s*)?(\(|[\w$]+\s*=>|function[\s*(])/

type Hook = ((...a: unknown[]) => unknown) | { fn: (...a: unknown[]) => unknown }

/** The function as the minified build prints it: no line breaks, no indentation. */
function oneLine(fn: (...a: unknown[]) => unknown): (...a: unknown[]) => unknown {
  const minified = fn.toString().replace(/\n\s*/g, '')
  const f = () => undefined
  f.toString = () => minified
  return f
}

function warningsOf(fn: (...a: unknown[]) => unknown): string[] {
  const out: string[] = []
  const log = console.log
  console.log = (...args: unknown[]) => { out.push(args.map(String).join(' ')) }
  try {
    sucrose({ handler: oneLine(fn) } as Parameters<typeof sucrose>[0])
  } finally {
    console.log = log
  }
  return out
}

forEachStore('Sucrose reads every route function of the minified build', (env) => {
  test('no route handler or hook makes Sucrose warn once minified', async () => {
    // Sucrose caches by source: start empty, so each store's run checks every function again.
    clearSucroseCache(0)
    await Bun.sleep(5)
    const app = buildApp(env.deps)
    const bad: string[] = []
    const methods: string[] = []
    let checked = 0
    for (const route of app.routes) {
      const hooks = route.hooks as unknown as Record<string, Hook[] | undefined>
      const fns: Array<[string, (...a: unknown[]) => unknown]> = []
      if (typeof route.handler === 'function') fns.push(['handler', route.handler as (...a: unknown[]) => unknown])
      for (const kind of LIFECYCLES) {
        for (const h of hooks[kind] ?? []) fns.push([kind, typeof h === 'function' ? h : h.fn])
      }
      for (const [kind, fn] of fns) {
        checked++
        const warnings = warningsOf(fn)
        if (warnings.length) bad.push(`${route.method} ${route.path} ${kind}: ${fn.toString().slice(0, 80)}`)
        // Sucrose parses arrows and `function`s by their syntax; a method only by its first line break.
        // (@elysiajs/openapi's own error hook of /openapi.json is a method, but one Sucrose gets through.)
        if (!ARROW_OR_FUNCTION.test(fn.toString()) && route.path !== '/openapi.json') methods.push(`${route.method} ${route.path} ${kind}: ${fn.toString().slice(0, 80)}`)
      }
    }
    expect(checked).toBeGreaterThan(200)
    expect(bad).toEqual([])
    expect([...new Set(methods)]).toEqual([])
  })

  test('the check itself: a hook written as a method warns once on one line', () => {
    const hooks = {
      transform({ request }: { request: Request }) {
        const need = request.method === 'GET' ? 'a key (sk_...)' : 'another'
        if (!request.headers.get('authorization')) throw new Error(`Missing key: ${need}`)
      },
    }
    expect(warningsOf(hooks.transform as (...a: unknown[]) => unknown).join('\n')).toContain('[Sucrose] warning')
  })
})
