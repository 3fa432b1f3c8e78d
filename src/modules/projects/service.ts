import { eq, or } from 'drizzle-orm'
import type { Store } from '../../db/client'
import { notFound } from '../../errors'
import { hashSecret, newKeyPair } from './keys'

export interface NewProject { id: string; name: string; publicKey: string; secretKey: string }

/** Creates a project with a fresh key pair; the secret key is returned once and stored hashed. */
export async function createProject(store: Store, input: { name: string; ownerUserId?: string | null }): Promise<NewProject> {
  const { projects, members } = store.t
  const keys = newKeyPair()
  const now = new Date()
  const id = Bun.randomUUIDv7()
  await store.tx(async (db) => {
    await db.insert(projects).values({
      id, name: input.name, publicKey: keys.publicKey, secretKeyHash: hashSecret(keys.secretKey),
      disabled: false, trackingEnabled: true, settings: {}, createdAt: now, updatedAt: now,
    })
    if (input.ownerUserId) await db.insert(members).values({ projectId: id, userId: input.ownerUserId, role: 'OWNER', createdAt: now })
  })
  return { id, name: input.name, ...keys }
}

/** Regenerates both keys at once; the old ones stop working with this commit (API.md rule 8). */
export async function rotateKeys(store: Store, projectId: string): Promise<{ id: string; publicKey: string; secretKey: string }> {
  const { projects } = store.t
  const keys = newKeyPair()
  const rows = await store.tx((db) => db.update(projects)
    .set({ publicKey: keys.publicKey, secretKeyHash: hashSecret(keys.secretKey), updatedAt: new Date() })
    .where(eq(projects.id, projectId)).returning({ id: projects.id }))
  if (!rows.length) throw notFound('project')
  return { id: projectId, ...keys }
}

/** A project by id or by name (the CLI's PROJECT argument). */
export async function findProject(store: Store, idOrName: string) {
  const { projects } = store.t
  const rows = await store.db.select().from(projects).where(or(eq(projects.id, idOrName), eq(projects.name, idOrName))).limit(2)
  const exact = rows.find((r) => r.id === idOrName) ?? (rows.length === 1 ? rows[0] : undefined)
  if (!exact) throw notFound(rows.length > 1 ? `unique project named "${idOrName}"` : 'project')
  return exact
}

export async function listProjects(store: Store) {
  const { projects } = store.t
  return store.db.select({ id: projects.id, name: projects.name, publicKey: projects.publicKey, disabled: projects.disabled, createdAt: projects.createdAt }).from(projects).orderBy(projects.createdAt)
}
