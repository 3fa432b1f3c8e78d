import type { Ctx } from '../../deps'
import { unverifiedDomain } from '../../errors'
import { decryptPrivateKey, masterKey } from './keys'
import { returnPathDomain, senderDomainCandidates } from './names'
import * as repo from './repo'

export { returnPathDomain } from './names'

/** What the DKIM signer and the envelope builder need for one verified sending domain. */
export interface VerifiedDomain {
  domainId: string
  /** The verified domain that covers the sender (the address's domain or a parent): the DKIM `d=`. */
  domain: string
  selector: string
  /** Decrypted PKCS#8 PEM. Never log it or put it in a response. */
  privateKeyPem: string
  /**
   * The domain for the VERP envelope sender: `bounce.<domain>` once its MX record was verified,
   * else MAILCTL_HOSTNAME (an unpublished bounce subdomain would lose bounces and fail sender checks).
   */
  returnPathDomain: string
  returnPathVerified: boolean
}

/** Decrypted private keys by domain id; an entry is valid only for the row version (updatedAt) it came from. */
const keyCache = new Map<string, { updatedAt: number; pem: string }>()
const KEY_CACHE_MAX = 10_000

async function privateKeyPem(ctx: Ctx, row: repo.SenderRow): Promise<string> {
  const hit = keyCache.get(row.id)
  if (hit && hit.updatedAt === row.updatedAt.getTime()) return hit.pem
  const blob = await repo.privateKeyBlob(ctx.store, ctx.store.db, ctx.projectId, row.id)
  if (!blob) throw unverifiedDomain(row.domain)
  const pem = decryptPrivateKey(masterKey(ctx.deps.config.dataDir), blob, row.id)
  if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value as string)
  keyCache.set(row.id, { updatedAt: row.updatedAt.getTime(), pem })
  return pem
}

/** Forgets a cached key (after a delete in this process; other processes rely on the per-call DB check). */
export function forgetSigningKey(domainId: string): void {
  keyCache.delete(domainId)
}

async function verifiedFor(ctx: Ctx, candidates: string[]): Promise<VerifiedDomain | null> {
  if (!candidates.length) return null
  // One indexed query per call: a deleted domain, or one gone back to pending, is never served from cache.
  const rows = await repo.verifiedAmong(ctx.store, ctx.store.db, ctx.projectId, candidates)
  if (!rows.length) return null
  const row = rows.reduce((best, r) => (r.domain.length > best.domain.length ? r : best))
  const returnPathVerified = row.checks.RETURN_PATH_MX?.status === 'verified'
  return {
    domainId: row.id,
    domain: row.domain,
    selector: row.selector,
    privateKeyPem: await privateKeyPem(ctx, row),
    returnPathDomain: returnPathVerified ? returnPathDomain(row.domain) : ctx.deps.config.hostname,
    returnPathVerified,
  }
}

/**
 * The sender gate of send, templates, campaigns, workflows and the SMTP relay: `fromEmail`'s domain, or
 * a parent domain, must be verified for the project. Throws 403 (code INTERNAL_SERVER_ERROR, as API.md
 * states) otherwise; returns the signing material of the most specific verified domain.
 */
export async function assertSenderAllowed(ctx: Ctx, fromEmail: string): Promise<VerifiedDomain> {
  const found = await verifiedFor(ctx, senderDomainCandidates(fromEmail))
  if (!found) {
    const at = fromEmail.lastIndexOf('@')
    throw unverifiedDomain(at >= 0 ? fromEmail.slice(at + 1).trim().toLowerCase() : fromEmail)
  }
  return found
}

/** The signing material for `domain` (or its closest verified parent) in the project, or null. */
export async function signingKeyFor(ctx: Ctx, domain: string): Promise<VerifiedDomain | null> {
  return verifiedFor(ctx, senderDomainCandidates(`x@${domain}`))
}
