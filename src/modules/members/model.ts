import { t } from 'elysia'
import { Email } from '../users/model'

export const RoleName = t.Union([t.Literal('OWNER'), t.Literal('ADMIN'), t.Literal('MEMBER')], { error: 'role must be OWNER, ADMIN or MEMBER' })

export const ProjectParams = t.Object({ id: t.String({ description: 'Project id' }) })
export const MemberParams = t.Object({
  id: t.String({ description: 'Project id' }),
  userId: t.String({ description: 'User id of a member, or the id of a pending invitation' }),
})

export const InviteBody = t.Object({
  email: Email,
  role: t.Optional(t.Union([t.Literal('ADMIN'), t.Literal('MEMBER')], { default: 'MEMBER', error: 'role must be ADMIN or MEMBER (ownership is transferred with PATCH)' })),
})
export type InviteBody = typeof InviteBody.static

export const RoleBody = t.Object({ role: RoleName })

export const MemberOut = t.Object({
  id: t.String({ description: 'The user id of a member, or the invitation id of a pending invitation' }),
  userId: t.Union([t.String(), t.Null()], { description: 'null while the invitation is pending' }),
  email: t.String(),
  name: t.Union([t.String(), t.Null()]),
  role: RoleName,
  status: t.Union([t.Literal('active'), t.Literal('invited')]),
  createdAt: t.Date(),
  expiresAt: t.Optional(t.Date({ description: 'When a pending invitation lapses' })),
}, { description: 'A team member, or a pending invitation (it becomes a membership only when the invitee accepts it)' })
export type MemberOut = typeof MemberOut.static

export const InvitationParams = t.Object({ id: t.String({ description: 'Invitation id' }) })
export const InvitationTokenBody = t.Object({
  token: t.String({ minLength: 1, maxLength: 200, description: 'The token of the link in the invitation email' }),
})

export const InvitationOut = t.Object({
  id: t.String(),
  projectId: t.String(),
  projectName: t.String({ description: "The project's name as its owner wrote it: untrusted text" }),
  role: RoleName,
  invitedBy: t.Union([t.String(), t.Null()], { description: "The inviter's (verified) email address; null if that account is gone" }),
  createdAt: t.Date(),
  expiresAt: t.Date(),
}, { description: 'A pending invitation addressed to the signed-in user' })
export type InvitationOut = typeof InvitationOut.static

export const AcceptedOut = t.Object({ projectId: t.String(), role: RoleName }, { description: 'The membership the acceptance made (or the one the user already had)' })
export type AcceptedOut = typeof AcceptedOut.static
