import { createHash, randomBytes } from 'node:crypto'
import type { Db, Store } from '../../db/client'
import * as repo from './repo'

export type TokenKind = 'verify-email' | 'password-reset'

/** Lifetimes of the single-use tokens mailed to users. */
export const TOKEN_TTL_MS: Record<TokenKind, number> = {
  'verify-email': 24 * 3600_000,
  'password-reset': 3600_000,
}

const hash = (token: string) => createHash('sha256').update(token).digest('hex')

/** Issues a token (returned once, stored only as its SHA-256), replacing the user's unused ones of that kind. */
export async function issueToken(store: Store, db: Db, userId: string, kind: TokenKind, now: Date): Promise<string> {
  const token = randomBytes(32).toString('base64url')
  await repo.replaceToken(store, db, {
    id: Bun.randomUUIDv7(), userId, kind, tokenHash: hash(token), expiresAt: new Date(now.getTime() + TOKEN_TTL_MS[kind]), createdAt: now,
  })
  return token
}

/**
 * Spends a token: one conditional UPDATE, so two concurrent uses cannot both succeed. Returns the user id,
 * or null when the token is unknown, of another kind, expired or already used.
 */
export async function consumeToken(store: Store, db: Db, kind: TokenKind, token: string, now: Date): Promise<string | null> {
  return repo.spendToken(store, db, kind, hash(token), now)
}
