import type { TestEnv } from './env'
import { encryptPrivateKey, generateDkimKeyPair, newSelector, type DkimKeyPair } from '../../src/modules/domains/keys'
import { insertDomain } from '../../src/modules/domains/repo'
import { dkimKey } from '../../src/secrets'

let shared: Promise<DkimKeyPair> | null = null

/**
 * A domain row written directly, verified or not, its private key encrypted with the key the service
 * decrypts with. The DNS-driven verification is the domains module's own test (and emails/fixture.ts).
 * All rows share one key pair unless `keys` is given (a pair is 2048-bit RSA: slow to make).
 */
export async function insertTestDomain(
  env: TestEnv, projectId: string, domain: string,
  opts: { verified: boolean; allowSubdomains?: boolean; keys?: DkimKeyPair },
): Promise<{ id: string; keys: DkimKeyPair }> {
  let keys = opts.keys
  if (!keys) {
    shared ??= generateDkimKeyPair()
    keys = await shared
  }
  const pair = keys
  const id = Bun.randomUUIDv7()
  const now = new Date()
  await env.store.tx((db) => insertDomain(env.store, db, {
    id, projectId, domain, selector: newSelector(now), dkimPublicKey: pair.publicKey,
    dkimPrivateKey: encryptPrivateKey(dkimKey(env.config), pair.privateKeyPem, id),
    verified: opts.verified, allowSubdomains: opts.allowSubdomains ?? false, checks: {},
    lastCheckedAt: null, verifiedAt: opts.verified ? now : null, createdAt: now, updatedAt: now,
  }))
  return { id, keys: pair }
}
