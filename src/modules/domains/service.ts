import type { RecordCheck } from '../../db/schema/domains'
import { ctxFor, type Ctx, type Deps } from '../../deps'
import { requireAccess } from '../members/access'
import { resolverFor } from '../../dns'
import { conflict, invalidField, notFound, unverifiedDomain } from '../../errors'
import { appendEvents, notifyEvents, type EventRow } from '../events/stream'
import { dkimKey } from '../../secrets'
import { decryptPrivateKey, encryptPrivateKey, generateDkimKeyPair, newSelector } from './keys'
import type { CreateDomainBody, DomainOut, UpdateDomainBody } from './model'
import { parseDomain, returnPathDomain, senderDomainCandidates } from '../../mail/names'
import { checkRecords, expectedRecords, PURPOSES } from './records'
import * as repo from './repo'

/** Projects holding one of a list of names verified, for the sender of system mail (src/modules/emails/system.ts). */
export { verifiedOwners } from './repo'

export { returnPathDomain } from '../../mail/names'

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
const keyCache = new Map<string, { version: number; pem: string }>()
const KEY_CACHE_MAX = 10_000

async function privateKeyPem(ctx: Ctx, row: repo.SenderRow): Promise<string> {
  const hit = keyCache.get(row.id)
  if (hit && hit.version === row.version) return hit.pem
  const blob = await repo.privateKeyBlob(ctx.store, ctx.store.db, ctx.projectId, row.id)
  if (!blob) throw unverifiedDomain(row.domain)
  const pem = decryptPrivateKey(dkimKey(ctx.deps.config), blob, row.id)
  if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value as string)
  keyCache.set(row.id, { version: row.version, pem })
  return pem
}

/** Forgets a cached key (after a delete in this process; other processes rely on the per-call DB check). */
export function forgetSigningKey(domainId: string): void {
  keyCache.delete(domainId)
}

/**
 * The most specific verified domain among `candidates` (a domain, then its parents). With `exactOnly`, a
 * parent counts only when its owner allowed subdomains: the sender gate. Signing takes any verified parent.
 */
async function verifiedFor(ctx: Ctx, candidates: string[], exactOnly: boolean): Promise<VerifiedDomain | null> {
  if (!candidates.length) return null
  // One indexed query per call: a deleted domain, or one gone back to pending, is never served from cache.
  let rows = await repo.verifiedAmong(ctx.store, ctx.store.db, ctx.projectId, candidates)
  if (exactOnly) rows = rows.filter((r) => r.domain === candidates[0] || r.allowSubdomains)
  if (!rows.length) return null
  const row = rows.reduce((best, r) => (r.domain.length > best.domain.length ? r : best))
  const returnPathVerified = row.returnPathStatus === 'verified'
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
 * a parent domain, must be verified for the project. Throws 403 (code INTERNAL_SERVER_ERROR, as docs/decisions.md, Errors,
 * states) otherwise; returns the signing material of the most specific verified domain.
 */
export async function assertSenderAllowed(ctx: Ctx, fromEmail: string): Promise<VerifiedDomain> {
  const found = await verifiedFor(ctx, senderDomainCandidates(fromEmail), true)
  if (!found) {
    const at = fromEmail.lastIndexOf('@')
    throw unverifiedDomain(at >= 0 ? fromEmail.slice(at + 1).trim().toLowerCase() : fromEmail)
  }
  return found
}

/** The signing material for `domain` (or its closest verified parent) in the project, or null. */
export async function signingKeyFor(ctx: Ctx, domain: string): Promise<VerifiedDomain | null> {
  return verifiedFor(ctx, senderDomainCandidates(`x@${domain}`), false)
}

// ---------------------------------------------------------------------------------------------------
// Domain verbs: add, list, verify (live DNS check), delete, and the background re-check.

/** Events recorded in the project's stream when a domain's state changes (contactId null). */
export const DOMAIN_VERIFIED_EVENT = 'domain.verified'
export const DOMAIN_UNVERIFIED_EVENT = 'domain.unverified'

function present(ctx: Ctx, row: repo.DomainInfo): DomainOut {
  const records = expectedRecords(row, ctx.deps.config.hostname).map((r) => {
    const check = row.checks[r.purpose]
    return { ...r, status: check?.status ?? 'pending', reason: check?.reason ?? null }
  })
  return {
    id: row.id, projectId: row.projectId, domain: row.domain, verified: row.verified, allowSubdomains: row.allowSubdomains, records,
    createdAt: row.createdAt, lastCheckedAt: row.lastCheckedAt,
  }
}

function sameProject(ctx: Ctx, projectId: string) {
  if (projectId !== ctx.projectId) throw notFound('project')
}

/** POST /domains: validates the name, creates its DKIM key pair and returns the records to publish. */
export async function createDomain(ctx: Ctx, input: CreateDomainBody): Promise<DomainOut> {
  sameProject(ctx, input.projectId)
  // allowSubdomains is an OWNER and ADMIN setting (PATCH /domains/:id): a MEMBER cannot set it at creation either.
  if (input.allowSubdomains && ctx.actor.kind === 'user') await requireAccess(ctx.deps, ctx.actor.userId, ctx.projectId, 'integrations')
  const parsed = parseDomain(input.domain)
  if (!parsed.ascii) throw invalidField('domain', parsed.error ?? 'Invalid domain', 'invalid_string', input.domain)
  const domain = parsed.ascii
  const { store } = ctx
  const clash = async (db = store.db) => {
    const existing = await repo.findByName(store, db, ctx.projectId, domain)
    if (existing) return conflict(`The domain ${domain} is already added to this project`, { id: existing.id })
    if (await repo.verifiedElsewhere(store, db, ctx.projectId, domain)) return conflict(`The domain ${domain} is verified by another project`)
    return null
  }
  const early = await clash()
  if (early) throw early
  const keys = await generateDkimKeyPair()
  const id = Bun.randomUUIDv7()
  const now = ctx.now
  const row: repo.DomainRow = {
    id, projectId: ctx.projectId, domain, selector: newSelector(now), dkimPublicKey: keys.publicKey,
    dkimPrivateKey: encryptPrivateKey(dkimKey(ctx.deps.config), keys.privateKeyPem, id),
    verified: false, allowSubdomains: input.allowSubdomains ?? false, checks: {}, lastCheckedAt: null, verifiedAt: null, createdAt: now, updatedAt: now,
  }
  try {
    await store.tx(async (db) => {
      const late = await clash(db)
      if (late) throw late
      await repo.insertDomain(store, db, row)
    })
  } catch (err) {
    if (repo.isUniqueViolation(err)) throw conflict(`The domain ${domain} is already added to this project`)
    throw err
  }
  ctx.deps.log.info('domain added', { projectId: ctx.projectId, domainId: id, domain, selector: row.selector })
  const { dkimPrivateKey: _secret, ...info } = row
  return present(ctx, info)
}

/** GET /domains/project/:projectId */
export async function listDomains(ctx: Ctx, projectId: string): Promise<DomainOut[]> {
  sameProject(ctx, projectId)
  const rows = await repo.listByProject(ctx.store, ctx.store.db, ctx.projectId)
  return rows.map((r) => present(ctx, r))
}

export async function getDomain(ctx: Ctx, id: string): Promise<DomainOut> {
  const row = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  if (!row) throw notFound('domain')
  return present(ctx, row)
}

/** The project's domain by name (the CLI's DOMAIN argument; IDNA accepted). */
export async function findDomainByName(ctx: Ctx, name: string): Promise<DomainOut> {
  const parsed = parseDomain(name)
  const row = parsed.ascii ? await repo.findByName(ctx.store, ctx.store.db, ctx.projectId, parsed.ascii) : null
  if (!row) throw notFound('domain')
  return present(ctx, row)
}

/** PATCH /domains/:id: whether senders at subdomains are covered. The gate reads it on every message. */
export async function updateDomain(ctx: Ctx, id: string, input: UpdateDomainBody): Promise<DomainOut> {
  const row = await ctx.store.tx((db) => repo.setAllowSubdomains(ctx.store, db, ctx.projectId, id, input.allowSubdomains, ctx.now))
  if (!row) throw notFound('domain')
  ctx.deps.log.info('domain updated', { projectId: ctx.projectId, domainId: id, allowSubdomains: input.allowSubdomains })
  return present(ctx, row)
}

/** DELETE /domains/:id: the key is gone with the row; the sender gate refuses the domain at once. */
export async function deleteDomain(ctx: Ctx, id: string): Promise<void> {
  const deleted = await ctx.store.tx((db) => repo.deleteById(ctx.store, db, ctx.projectId, id))
  if (!deleted) throw notFound('domain')
  forgetSigningKey(id)
  ctx.deps.log.info('domain deleted', { projectId: ctx.projectId, domainId: id })
}

const ELSEWHERE = 'The record matches, but this domain is already verified by another project'

/**
 * Checks every record of one domain in DNS now and stores the outcome. `verified` follows the DKIM
 * record: it turns true when the record matches the key exactly, false when the record is definitively
 * missing or wrong; a temporary look-up failure (SERVFAIL, timeout) changes nothing but the reason.
 * A change of `verified` is recorded as a domain.verified / domain.unverified event of the project.
 */
async function checkAndSave(ctx: Ctx, row: repo.DomainInfo): Promise<repo.DomainInfo> {
  const { config } = ctx.deps
  const result = await checkRecords(resolverFor(config), row, config.hostname)
  const now = ctx.deps.clock.date()
  const checks: Record<string, RecordCheck> = {}
  for (const p of PURPOSES) {
    const out = result[p]
    const prev = row.checks[p]
    checks[p] = !out.definitive && prev?.status === 'verified'
      ? { status: 'verified', reason: out.reason, checkedAt: prev.checkedAt }
      : { status: out.status, reason: out.reason, checkedAt: now.toISOString() }
  }
  const dkim = result.DKIM
  let verified = dkim.status === 'verified' ? true : dkim.definitive ? false : row.verified

  const save = (wantVerified: boolean) => ctx.store.tx(async (db) => {
    const current = await repo.findById(ctx.store, db, ctx.projectId, row.id)
    if (!current) throw notFound('domain')
    let v = wantVerified
    if (v && !current.verified && await repo.verifiedElsewhere(ctx.store, db, ctx.projectId, current.domain)) {
      v = false
      checks.DKIM = { status: 'failed', reason: ELSEWHERE, checkedAt: now.toISOString() }
    }
    const saved = await repo.saveCheck(ctx.store, db, ctx.projectId, row.id, {
      verified: v, checks, lastCheckedAt: now, verifiedAt: v ? (current.verified ? current.verifiedAt ?? now : now) : null, updatedAt: now,
    })
    if (!saved) throw notFound('domain')
    let events: EventRow[] = []
    if (v !== current.verified) {
      const reason = v ? null : checks.DKIM.reason
      events = await appendEvents({ ...ctx, now }, db, [{
        contactId: null,
        name: v ? DOMAIN_VERIFIED_EVENT : DOMAIN_UNVERIFIED_EVENT,
        data: { domainId: row.id, domain: current.domain, ...(reason ? { reason } : {}) },
      }])
    }
    return { saved, events, changed: v !== current.verified }
  })

  let out: Awaited<ReturnType<typeof save>>
  try {
    out = await save(verified)
  } catch (err) {
    // Another project verified the same domain between our check and our write (partial unique index).
    if (!verified || !repo.isUniqueViolation(err)) throw err
    verified = false
    checks.DKIM = { status: 'failed', reason: ELSEWHERE, checkedAt: now.toISOString() }
    out = await save(false)
  }
  if (out.changed) {
    ctx.deps.log.info(out.saved.verified ? 'domain verified' : 'domain no longer verified', {
      projectId: ctx.projectId, domainId: row.id, domain: row.domain, reason: out.saved.checks.DKIM?.reason ?? null,
    })
  }
  await notifyEvents(ctx, out.events)
  return out.saved
}

/** GET /domains/:id/verify: checks DNS now (via MAILCTL_DNS_SERVERS when set). */
export async function verifyDomain(ctx: Ctx, id: string): Promise<DomainOut> {
  const row = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  if (!row) throw notFound('domain')
  return present(ctx, await checkAndSave(ctx, row))
}

export const PENDING_RECHECK_MS = 5 * 60_000
export const VERIFIED_RECHECK_MS = 24 * 3600_000

/**
 * The background re-check (job domains.recheck): pending domains not checked for 5 minutes, verified
 * ones not checked for a day, oldest first, a few at a time. Returns how many were checked and flipped.
 */
export async function recheckDueDomains(deps: Deps, opts: { limit?: number; concurrency?: number } = {}) {
  const now = deps.clock.now()
  const due = await repo.dueForRecheck(deps.store, deps.store.db, new Date(now - PENDING_RECHECK_MS), new Date(now - VERIFIED_RECHECK_MS), opts.limit ?? 100)
  let checked = 0, verified = 0, unverified = 0, failed = 0
  const queue = [...due]
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const ctx = ctxFor(deps, next.projectId, { kind: 'job', name: 'domains.recheck' })
      try {
        const before = await repo.findById(deps.store, deps.store.db, next.projectId, next.id)
        if (!before) continue
        const after = await checkAndSave(ctx, before)
        checked++
        if (after.verified && !before.verified) verified++
        if (!after.verified && before.verified) unverified++
      } catch (err) {
        failed++
        deps.log.warn('domain re-check failed', { projectId: next.projectId, domainId: next.id, error: err instanceof Error ? err.message : String(err) })
      }
    }
  }
  await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, worker))
  return { due: due.length, checked, verified, unverified, failed }
}

