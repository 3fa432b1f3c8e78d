import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as service from './service'

const detail = (summary: string, description?: string) => ({ tags: ['security'], summary, description, security: [{ session: [] }] })
const Params = t.Object({ id: t.String() })
const Rate = t.Number({ description: 'A fraction (0-1)' })
export const SecurityState = t.Object({
  windowDays: t.Integer(),
  windowStart: t.String({ format: 'date-time', description: '7 days ago, or the last lift of a suspension if later' }),
  sent: t.Integer(), bounced: t.Integer(), complained: t.Integer(), bounceRate: Rate, complaintRate: Rate,
  thresholds: t.Object({ bounceWarning: Rate, bounceSuspend: Rate, complaintWarning: Rate, complaintSuspend: Rate, minimumSent: t.Integer() }),
  status: t.Union([t.Literal('ok'), t.Literal('warning'), t.Literal('suspended')]),
  overSuspensionThreshold: t.Boolean(),
  warnings: t.Array(t.String()),
  suspensions: t.Array(t.Object({ at: t.String({ format: 'date-time' }), reason: t.String(), liftedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]) })),
})

/** GET /users/@me/projects/:id/security, GET /projects/:id/security, POST /users/@me/projects/:id/enable (dashboard session). */
export function securityRoutes(deps: Deps) {
  const mine = new Elysia({ prefix: '/users/@me/projects' }).use(authPlugin(deps))
    .get('/:id/security', ({ userId, params }) => service.mySecurity(deps, userId, params.id), {
      session: true, params: Params, response: { 200: SecurityState },
      detail: detail('Bounce and complaint rates over 7 days, warnings, suspensions', 'Any member.'),
    })
    .post('/:id/enable', ({ userId, params }) => service.enableMyProject(deps, userId, params.id), {
      session: true, params: Params, response: { 200: SecurityState },
      detail: detail('Lift a suspension', 'OWNER only. The rates then count from this moment.'),
    })
  const projects = new Elysia({ prefix: '/projects' }).use(authPlugin(deps))
    .get('/:id/security', ({ userId, params }) => service.mySecurity(deps, userId, params.id), {
      session: true, params: Params, response: { 200: SecurityState },
      detail: detail('Security state of one project', 'Any member.'),
    })
  return new Elysia().use(mine).use(projects)
}
