import { Elysia } from 'elysia'
import type { Deps } from '../deps'
import { readiness } from '../db/readiness'

/** Liveness and readiness (GET /health, GET /ready). */
export function systemRoutes(deps: Deps) {
  return new Elysia({ tags: ['system'] } as never)
    .get('/health', () => ({ status: 'ok' }), { detail: { summary: 'Liveness: the process answers' } })
    .get('/ready', async ({ set }) => {
      const r = await readiness(deps.store)
      if (!r.ready) set.status = 503
      return { status: r.ready ? 'ready' : 'not_ready', checks: r.checks, ...(r.problems ? { problems: r.problems } : {}) }
    }, { detail: { summary: 'Readiness: database reachable, every migration applied, storage writable', description: 'Each check answers within a second or counts as failed, so /ready never hangs. 503 names the failing checks in `checks` (false) and says why in `problems` (disk full, database unavailable, no answer within the deadline).' } })
}
