import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import { CreateProjectBody, ProjectOut, ProjectParams, ProjectWithSecret, SetupState, UpdateProjectBody } from './model'
import * as service from './service'

const detail = (summary: string, description?: string) => ({ tags: ['projects'], summary, description, security: [{ session: [] }] })

/** /users/@me/projects (the signed-in user's projects) and /projects/:id/setup-state. Dashboard session. */
export function projectsRoutes(deps: Deps) {
  const mine = new Elysia({ prefix: '/users/@me/projects' }).use(authPlugin(deps))
    .get('', ({ userId }) => service.listMyProjects(deps, userId), {
      session: true, response: { 200: t.Array(ProjectOut) },
      detail: detail("List the user's projects", 'Only projects the user is a member of, with their role. Never includes a secret key.'),
    })
    .post('', async ({ userId, body, set }) => {
      const out = await service.createMyProject(deps, userId, body)
      set.status = 201
      return out
    }, {
      session: true, body: CreateProjectBody, response: { 201: ProjectWithSecret },
      detail: detail('Create a project', 'The user becomes its OWNER. The response holds the secret key, shown only now.'),
    })
    .patch('/:id', ({ userId, params, body }) => service.updateMyProject(deps, userId, params.id, body), {
      session: true, params: ProjectParams, body: UpdateProjectBody, response: { 200: ProjectOut },
      detail: detail('Update project settings', 'OWNER or ADMIN: name, trackingEnabled, sendRatePerSecond (campaign mail, messages per second; null for the server default), and the sender defaults the dashboard fills in for new templates and campaigns: defaultFrom (on a verified domain of the project, else 422), defaultFromName, defaultReplyTo (null clears each). 404 for a project the user is not a member of.'),
    })
    .delete('/:id', async ({ userId, params, set }) => {
      await service.deleteMyProject(deps, userId, params.id)
      set.status = 204
    }, { session: true, params: ProjectParams, detail: detail('Delete the project', 'OWNER only; irreversible. 204 on success.') })
    .post('/:id/reset', ({ userId, params }) => service.resetMyProject(deps, userId, params.id), {
      session: true, params: ProjectParams, response: { 200: ProjectOut },
      detail: detail('Wipe project data (irreversible)', 'OWNER only. Deletes contacts, events, jobs, captured mail, idempotency keys and the data of every other module in one transaction; keys, settings and members stay.'),
    })
    .post('/:id/regenerate-keys', ({ userId, params }) => service.regenerateMyKeys(deps, userId, params.id), {
      session: true, params: ProjectParams, response: { 200: ProjectWithSecret },
      detail: detail('Regenerate both API keys', 'OWNER or ADMIN. Both keys change at once; the old ones stop working immediately. The response holds the new secret key, shown only now.'),
    })
  const setup = new Elysia({ prefix: '/projects' }).use(authPlugin(deps))
    .get('/:id/setup-state', ({ userId, params }) => service.setupState(deps, userId, params.id), {
      session: true, params: ProjectParams, response: { 200: SetupState },
      detail: detail('Onboarding state', 'Any member. Which first steps the project has done.'),
    })
  return new Elysia().use(mine).use(setup)
}
