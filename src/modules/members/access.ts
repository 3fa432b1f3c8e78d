import type { Db } from '../../db/client'
import type { Deps } from '../../deps'
import { forbidden, notFound } from '../../errors'
import * as repo from './repo'

export const ROLES = ['OWNER', 'ADMIN', 'MEMBER'] as const
export type Role = (typeof ROLES)[number]

/**
 * What a dashboard user may do on a project (docs/decisions.md, Member roles). OWNER: everything. ADMIN: everything but
 * deleting (or resetting) the project and changing the owner. MEMBER: read and write resources, not keys,
 * billing, members, project settings, webhook endpoints or a domain's allowSubdomains (integrations).
 */
export type Action = 'read' | 'write' | 'integrations' | 'members' | 'keys' | 'settings' | 'billing' | 'reset' | 'delete' | 'transfer'

const ALLOWED: Record<Action, readonly Role[]> = {
  read: ROLES,
  write: ROLES,
  // Webhook endpoints (they receive every event of the project) and a domain's allowSubdomains.
  integrations: ['OWNER', 'ADMIN'],
  members: ['OWNER', 'ADMIN'],
  keys: ['OWNER', 'ADMIN'],
  settings: ['OWNER', 'ADMIN'],
  billing: ['OWNER', 'ADMIN'],
  reset: ['OWNER'],
  delete: ['OWNER'],
  transfer: ['OWNER'],
}

const WHAT: Record<Action, string> = {
  read: 'read this project', write: 'change resources of this project',
  integrations: 'manage webhook endpoints or domain settings', members: 'manage members',
  keys: 'manage API keys', settings: 'change project settings', billing: 'manage billing',
  reset: 'reset the project', delete: 'delete the project', transfer: 'transfer ownership',
}

export function can(role: Role, action: Action): boolean {
  return ALLOWED[action].includes(role)
}

/** The user's role on the project; undefined when not a member. */
export async function roleOf(deps: Deps, projectId: string, userId: string, db: Db = deps.store.db): Promise<Role | undefined> {
  return (await repo.roleOf(deps.store, db, projectId, userId)) as Role | undefined
}

/**
 * The role of `userId` on the project if it allows `action`. A project the user is not a member of does
 * not exist for them (404); a role that does not allow the action is 403.
 */
export async function requireAccess(deps: Deps, userId: string, projectId: string, action: Action, db?: Db): Promise<Role> {
  const role = await roleOf(deps, projectId, userId, db)
  if (!role) throw notFound('project')
  if (!can(role, action)) throw forbidden(`Your role (${role}) does not allow you to ${WHAT[action]}`)
  return role
}
