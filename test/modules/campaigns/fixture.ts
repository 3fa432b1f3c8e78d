import type { TestEnv } from '../../helpers/env'
import { encryptPrivateKey, generateDkimKeyPair, masterKey, newSelector, type DkimKeyPair } from '../../../src/modules/domains/keys'
import * as domainRepo from '../../../src/modules/domains/repo'

let keys: DkimKeyPair | null = null

/** A domain row written directly (the DNS-driven verification is the domains module's own test). */
export async function addDomain(env: TestEnv, projectId: string, domain: string, verified: boolean): Promise<string> {
  keys ??= await generateDkimKeyPair()
  const id = Bun.randomUUIDv7()
  const now = new Date()
  const k = keys
  await env.store.tx((db) => domainRepo.insertDomain(env.store, db, {
    id, projectId, domain, selector: newSelector(now), dkimPublicKey: k.publicKey,
    dkimPrivateKey: encryptPrivateKey(masterKey(env.config.dataDir), k.privateKeyPem, id),
    verified, checks: {}, lastCheckedAt: null, verifiedAt: verified ? now : null, createdAt: now, updatedAt: now,
  }))
  return id
}

export const campaignBody = (over: Record<string, unknown> = {}) => ({
  name: 'Spring sale', description: 'Everything 20% off', subject: 'Hello {{firstName}}', body: '<p>Hi {{firstName}}, code {{code}}</p>',
  from: 'news@example.com', fromName: 'Example', replyTo: 'support@example.com', audienceType: 'ALL', ...over,
})
