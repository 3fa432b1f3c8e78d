import { randomBytes } from 'node:crypto'

/** docs/decisions.md, API keys: `pk_`/`sk_` + 64 lowercase hex characters (32 random bytes). */
export const KEY_PATTERN = /^(pk|sk)_[0-9a-f]{64}$/

export type KeyKind = 'public' | 'secret'

export function newKeyPair(): { publicKey: string; secretKey: string } {
  return { publicKey: `pk_${randomBytes(32).toString('hex')}`, secretKey: `sk_${randomBytes(32).toString('hex')}` }
}

/** Secret keys are stored only as this hash. */
export function hashSecret(secretKey: string): string {
  return Bun.SHA256.hash(secretKey, 'hex')
}

export function keyKind(key: string): KeyKind | null {
  if (!KEY_PATTERN.test(key)) return null
  return key.startsWith('pk_') ? 'public' : 'secret'
}
