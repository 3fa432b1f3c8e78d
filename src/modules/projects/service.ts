import type { Store } from '../../db/client'
import { AppError, conflict, invalidField, notFound } from '../../errors'
import { ctxFor, type Deps } from '../../deps'
import { assertSenderAllowed } from '../domains/service'
import { hashSecret, keyKind, newKeyPair, type KeyKind } from './keys'
import { parseInput } from '../validate'
import { requireAccess, type Action, type Role } from '../members/access'
import { CreateProjectBody, type ProjectOut, type ProjectWithSecret, type SetupState, type UpdateProjectBody } from './model'
import * as repo from './repo'
import { confirmKeys, type KeyConfirm, type ProjectRow } from './repo'

export type { ProjectRow }

/** A project's settings (JSON object), read in `db`: the campaign fan-out reads its sending rate here. */
export { settingsOf as projectSettings } from './repo'

export interface NewProject { id: string; name: string; publicKey: string; secretKey: string }

/** Creates a project with a fresh key pair; the secret key is returned once and stored hashed. */
export async function createProject(store: Store, input: { name: string; ownerUserId?: string | null }): Promise<NewProject> {
  const { name } = parseInput(CreateProjectBody, { name: input.name })
  const keys = newKeyPair()
  const id = Bun.randomUUIDv7()
  await store.tx((db) => repo.insert(store, db, {
    id, name, publicKey: keys.publicKey, secretKeyHash: hashSecret(keys.secretKey), ownerUserId: input.ownerUserId ?? null, now: new Date(),
  }))
  return { id, name, ...keys }
}

/** Regenerates both keys at once; the old ones stop working with this commit (docs/decisions.md, API keys). */
export async function rotateKeys(store: Store, projectId: string): Promise<{ id: string; publicKey: string; secretKey: string }> {
  const keys = newKeyPair()
  const found = await store.tx((db) => repo.setKeys(store, db, projectId, keys.publicKey, hashSecret(keys.secretKey), new Date()))
  if (!found) throw notFound('project')
  return { id: projectId, ...keys }
}

/**
 * The project an API key belongs to, and the kind of the key. `confirm`: the key was answered from memory
 * (projectForKeyConfirmedInWrite), and the request's write must confirm it (confirmKeys) before it commits.
 */
export interface KeyOwner { project: ProjectRow; kind: KeyKind; confirm?: KeyConfirm }

export type { KeyConfirm }
export { confirmKeys }

/** What POST /v1/track takes, as its 401 names it. */
export const TRACK_KEYS = 'a public (pk_...) or secret (sk_...) key'
/** The 401 of a key that opens no project (or not this route); `need` names the kinds the route takes. */
export const invalidKey = (need: string) => new AppError('INVALID_API_KEY', `Invalid API key: this endpoint requires ${need}`)
/** The 403 of a key whose project is disabled. */
export const projectDisabled = () => new AppError('PROJECT_DISABLED', 'This project is disabled')

/**
 * A write found the key it was given from memory stale (confirmKeys): rotated, disabled or deleted since
 * it was kept. Nothing of the write was committed; reconfirmKey looks the key up afresh.
 */
export class StaleKeyError extends Error {
  constructor(readonly key: KeyConfirm) {
    super('the API key was rotated, or its project disabled, after it was kept: looked up again')
  }
}

/**
 * Looks a key up: public keys in clear, secret keys by their SHA-256 hash. Runs on every authenticated
 * HTTP request and every relay login; repo.byKey keeps the prepared statements and the SQLite read cache.
 */
export async function projectForKey(store: Store, key: string): Promise<KeyOwner | null> {
  const kind = keyKind(key)
  if (!kind) return null
  const project = await repo.byKey(store, kind, kind === 'public' ? key : hashSecret(key))
  return project ? { project, kind } : null
}

/**
 * As projectForKey, for a route whose write confirms the key in its own transaction (POST /v1/track): on
 * PostgreSQL a key seen before costs no look-up (repo.byKeyConfirmedInWrite) and comes with `confirm`.
 */
export async function projectForKeyConfirmedInWrite(store: Store, key: string): Promise<KeyOwner | null> {
  const kind = keyKind(key)
  if (!kind) return null
  const value = kind === 'public' ? key : hashSecret(key)
  const found = await repo.byKeyConfirmedInWrite(store, kind, value)
  if (!found) return null
  return found.cached ? { project: found.row, kind, confirm: { projectId: found.row.id, kind, value } } : { project: found.row, kind }
}

/**
 * After a StaleKeyError: drops the kept key and looks it up afresh, as for a first request. Throws the 401
 * or 403 the request would have had (`need` as for invalidKey); returns when the key still opens its
 * project, enabled (the write then runs again without `confirm`, as with no cache).
 */
export async function reconfirmKey(store: Store, key: KeyConfirm, need: string): Promise<void> {
  repo.forgetKey(store, key.kind, key.value)
  const row = await repo.byKey(store, key.kind, key.value)
  if (!row || row.id !== key.projectId) throw invalidKey(need)
  if (row.disabled) throw projectDisabled()
}

/**
 * The project a dashboard user acts on with the session cookie and X-Project-Id (docs/decisions.md, The
 * dashboard): 404 when the user is not a member, 403 when the role does not allow `action`.
 */
export async function projectForMember(deps: Deps, userId: string, projectId: string, action: Action): Promise<{ project: ProjectRow; role: Role }> {
  const role = await requireAccess(deps, userId, projectId, action)
  const project = await repo.byId(deps.store, deps.store.db, projectId)
  if (!project) throw notFound('project')
  return { project, role }
}

/** How many same-named projects an ambiguous PROJECT argument lists. */
const AMBIGUOUS_LISTED = 20

/**
 * A project by id or by name (the CLI's PROJECT argument). Names are not unique (two people may call
 * their project "newsletter"): an id always wins; a name that several projects share is refused with a
 * CONFLICT that lists their ids (oldest first), so the operator can pass the one meant.
 */
export async function findProject(store: Store, idOrName: string) {
  const rows = await repo.byIdOrName(store, store.db, idOrName, AMBIGUOUS_LISTED + 1)
  const byId = rows.find((r) => r.id === idOrName)
  if (byId) return byId
  if (rows.length === 1) return rows[0]
  if (!rows.length) throw notFound('project')
  const shown = rows.slice(0, AMBIGUOUS_LISTED)
  const count = rows.length > AMBIGUOUS_LISTED ? `More than ${AMBIGUOUS_LISTED}` : String(rows.length)
  const list = shown.map((r) => `${r.id} (created ${new Date(r.createdAt).toISOString()})`).join(', ')
  throw conflict(`${count} projects are named "${idOrName}": ${list}. Pass the id of the one you mean`, {
    projects: shown.map((r) => ({ id: r.id, name: r.name, createdAt: new Date(r.createdAt).toISOString() })),
  })
}

export async function listProjects(store: Store) {
  return repo.all(store, store.db)
}

/* ---- The dashboard's view: a user's projects (/users/@me/projects, /projects/:id/setup-state) ---- */

/** The key of a project's own campaign sending rate in its settings (messages per second). */
export const SEND_RATE_SETTING = 'sendRatePerSecond'

/** A project's own campaign sending rate (null: none set). */
export function sendRateOf(settings: Record<string, unknown> | null | undefined): number | null {
  const v = settings?.[SEND_RATE_SETTING]
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : null
}

/** The sender defaults: the settings keys the dashboard fills new templates and campaigns from. */
const DEFAULT_KEYS = ['defaultFrom', 'defaultFromName', 'defaultReplyTo'] as const

function toOut(row: NonNullable<Awaited<ReturnType<typeof repo.oneForUser>>>): ProjectOut {
  const { settings, ...rest } = row
  const str = (k: string) => (typeof settings?.[k] === 'string' ? settings[k] as string : null)
  return { ...rest, sendRatePerSecond: sendRateOf(settings), defaultFrom: str('defaultFrom'), defaultFromName: str('defaultFromName'), defaultReplyTo: str('defaultReplyTo') } as ProjectOut
}

async function mine(deps: Deps, userId: string, projectId: string): Promise<ProjectOut> {
  const row = await repo.oneForUser(deps.store, deps.store.db, userId, projectId)
  if (!row) throw notFound('project')
  return toOut(row)
}

/** The projects the user is a member of, oldest first. */
export async function listMyProjects(deps: Deps, userId: string): Promise<ProjectOut[]> {
  return (await repo.forUser(deps.store, deps.store.db, userId)).map(toOut)
}

/** Creates a project owned by the user; the only time (with regenerate-keys) the secret key is shown. */
export async function createMyProject(deps: Deps, userId: string, input: CreateProjectBody): Promise<ProjectWithSecret> {
  const created = await createProject(deps.store, { name: input.name, ownerUserId: userId })
  return { ...(await mine(deps, userId, created.id)), secretKey: created.secretKey }
}

/** PATCH: name, tracking and the campaign sending rate (OWNER or ADMIN). */
export async function updateMyProject(deps: Deps, userId: string, projectId: string, patch: UpdateProjectBody): Promise<ProjectOut> {
  const from = typeof patch.defaultFrom === 'string' ? patch.defaultFrom.trim().toLowerCase() : patch.defaultFrom
  if (from) {
    // A default sender is one the project may send from; checked before anything is written (and after the
    // access check, so a stranger learns nothing of the project's domains).
    await requireAccess(deps, userId, projectId, 'settings')
    await assertSenderAllowed(ctxFor(deps, projectId, { kind: 'user', userId }), from).catch((err) => {
      if (err instanceof AppError && err.status === 403) throw invalidField('defaultFrom', `${from} is not on a verified domain of this project: verify its domain first`, 'unverified_domain')
      throw err
    })
  }
  await deps.store.tx(async (db) => {
    await requireAccess(deps, userId, projectId, 'settings', db)
    const set: UpdateProjectBody = {}
    if (patch.name !== undefined) set.name = patch.name
    if (patch.trackingEnabled !== undefined) set.trackingEnabled = patch.trackingEnabled
    await repo.update(deps.store, db, projectId, set, deps.clock.date())
    if (patch.sendRatePerSecond !== undefined) await repo.setSetting(deps.store, db, projectId, SEND_RATE_SETTING, patch.sendRatePerSecond, deps.clock.date())
    const defaults = { ...patch, defaultFrom: from, defaultReplyTo: typeof patch.defaultReplyTo === 'string' ? patch.defaultReplyTo.trim().toLowerCase() : patch.defaultReplyTo }
    for (const k of DEFAULT_KEYS) if (patch[k] !== undefined) await repo.setSetting(deps.store, db, projectId, k, defaults[k], deps.clock.date())
  })
  return mine(deps, userId, projectId)
}

/** Regenerates both keys (OWNER or ADMIN); the old ones stop working with this commit. */
export async function regenerateMyKeys(deps: Deps, userId: string, projectId: string): Promise<ProjectWithSecret> {
  const keys = await deps.store.tx(async (db) => {
    await requireAccess(deps, userId, projectId, 'keys', db)
    return rotateKeys(deps.store, projectId)
  })
  return { ...(await mine(deps, userId, projectId)), secretKey: keys.secretKey }
}

/** Wipes the project's data (see PROJECT_DATA_TABLES) in one transaction; keys, settings and team stay. OWNER only. */
export async function resetMyProject(deps: Deps, userId: string, projectId: string): Promise<ProjectOut> {
  await deps.store.tx(async (db) => {
    await requireAccess(deps, userId, projectId, 'reset', db)
    await repo.wipeProjectData(deps.store, db, projectId)
    await repo.update(deps.store, db, projectId, {}, deps.clock.date())
  })
  return mine(deps, userId, projectId)
}

/** Deletes the project and everything in it. OWNER only. */
export async function deleteMyProject(deps: Deps, userId: string, projectId: string): Promise<void> {
  await deps.store.tx(async (db) => {
    await requireAccess(deps, userId, projectId, 'delete', db)
    await repo.wipeProjectData(deps.store, db, projectId)
    await repo.remove(deps.store, db, projectId)
  })
}

/** GET /projects/:id/setup-state: every member may read it. */
export async function setupState(deps: Deps, userId: string, projectId: string): Promise<SetupState> {
  await requireAccess(deps, userId, projectId, 'read')
  const steps = [{ id: 'project', title: 'Create a project', done: true }]
  steps.push(...await repo.setupSteps(deps.store, projectId))
  return { projectId, steps, completed: steps.every((s) => s.done) }
}
