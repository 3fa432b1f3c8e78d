import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import { InviteBody, MemberOut, MemberParams, ProjectParams, RoleBody } from './model'
import * as service from './service'

const detail = (summary: string, description?: string) => ({ tags: ['members'], summary, description, security: [{ session: [] }] })

/** /projects/:id/members: the team of a project (dashboard session). */
export function membersRoutes(deps: Deps) {
  return new Elysia({ prefix: '/projects/:id/members' }).use(authPlugin(deps))
    .get('', ({ userId, params }) => service.listTeam(deps, userId, params.id), {
      session: true, params: ProjectParams, response: { 200: t.Array(MemberOut) },
      detail: detail('List team members', 'Members, then pending invitations. Any member may read the team.'),
    })
    .post('', async ({ userId, params, body, set }) => {
      const out = await service.invite(deps, userId, params.id, body)
      set.status = 201
      return out
    }, {
      session: true, params: ProjectParams, body: InviteBody, response: { 201: MemberOut },
      detail: detail('Invite a member', 'OWNER or ADMIN. A verified account joins at once; another address gets an invitation (emailed) that is accepted when the address is verified. 409 if already a member.'),
    })
    .patch('/:userId', ({ userId, params, body }) => service.changeRole(deps, userId, params.id, params.userId, body.role), {
      session: true, params: MemberParams, body: RoleBody, response: { 200: MemberOut },
      detail: detail("Change a member's role", 'OWNER or ADMIN. Setting OWNER transfers ownership (owner only); the previous owner becomes ADMIN.'),
    })
    .delete('/:userId', async ({ userId, params, set }) => {
      await service.removeMember(deps, userId, params.id, params.userId)
      set.status = 204
    }, {
      session: true, params: MemberParams,
      detail: detail('Remove a member or cancel an invitation', 'OWNER or ADMIN; any member but the owner may remove themselves. The owner cannot be removed. 204 on success.'),
    })
}
