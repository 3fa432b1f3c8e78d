import { Elysia } from 'elysia'
import type { Deps } from '../deps'
import { isReady } from '../db/migrate'

/** Liveness and readiness (GET /health, GET /ready). */
export function systemRoutes(deps: Deps) {
  return new Elysia({ tags: ['system'] } as never)
    .get('/health', () => ({ status: 'ok' }), { detail: { summary: 'Liveness: the process answers' } })
    .get('/ready', async ({ set }) => {
      const r = await isReady(deps.store)
      const ok = r.database && r.migrations
      if (!ok) set.status = 503
      return { status: ok ? 'ready' : 'not_ready', checks: r }
    }, { detail: { summary: 'Readiness: database reachable and every migration applied' } })
}
