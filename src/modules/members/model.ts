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
}, { description: 'A team member, or an invitation accepted when the invited address is verified' })
export type MemberOut = typeof MemberOut.static
