import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import { AcceptedOut, InvitationOut, InvitationParams, InvitationTokenBody, InviteBody, MemberOut, MemberParams, ProjectParams, RoleBody } from './model'
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
      detail: detail('Invite a member', 'OWNER or ADMIN, with a verified address (403 otherwise). Always a pending invitation (status "invited", emailed with a link), the same answer whether or not an account uses the address; it becomes a membership only when the invitee accepts it. Inviting again renews it (new link, new expiry). 409 if already a member. List pending invitations with GET and revoke one with DELETE /projects/:id/members/:invitationId.'),
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

/** /users/@me/invitations: the signed-in user's side of invitations (dashboard session). */
export function invitationsRoutes(deps: Deps) {
  return new Elysia({ prefix: '/users/@me/invitations' }).use(authPlugin(deps))
    .get('', ({ userId }) => service.myInvitations(deps, userId), {
      session: true, response: { 200: t.Array(InvitationOut) },
      detail: detail('Your pending invitations', 'Invitations addressed to your verified address, newest last; none while your address is unverified. projectName is the inviter\'s text.'),
    })
    .post('/accept', ({ userId, body }) => service.acceptInvitationByToken(deps, userId, body.token), {
      session: true, body: InvitationTokenBody, response: { 200: AcceptedOut },
      detail: detail('Accept an invitation from its emailed link', 'The token of the link; the invitation must be addressed to your account\'s address (it then also counts as verified). 404 NOT_FOUND for an unknown, expired, answered or someone else\'s invitation.'),
    })
    .post('/:id/accept', ({ userId, params }) => service.acceptInvitation(deps, userId, params.id), {
      session: true, params: InvitationParams, response: { 200: AcceptedOut },
      detail: detail('Accept an invitation', 'Makes you a member with the invited role. 404 NOT_FOUND for an unknown, expired, answered or someone else\'s invitation.'),
    })
    .post('/:id/decline', async ({ userId, params, set }) => {
      await service.declineInvitation(deps, userId, params.id)
      set.status = 204
    }, {
      session: true, params: InvitationParams,
      detail: detail('Decline an invitation', 'The invitation ends. 204 on success; 404 NOT_FOUND as for accept.'),
    })
}
