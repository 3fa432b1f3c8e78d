import { createCipheriv, createDecipheriv, generateKeyPair, randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * DKIM key material. Private keys are stored encrypted with AES-256-GCM under a 32-byte master key: from
 * MAILCTL_DKIM_KEY, derived from MAILCTL_SECRET, or (SQLite only) kept in `<MAILCTL_DATA_DIR>/dkim.key`
 * (generated on first use, mode 0600); src/secrets.ts chooses. Each ciphertext is bound to its domain row
 * id (GCM additional data), so a key copied onto another row does not decrypt. Losing the master key makes
 * every stored DKIM key unusable.
 */

const KEY_FILE = 'dkim.key'
const masterKeys = new Map<string, Buffer>()

function parseKeyFile(path: string, text: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64')
  if (key.length !== 32) throw new Error(`${path} does not hold a base64 32-byte key`)
  return key
}

/** The data dir's DKIM encryption key, created on first use (safe when several processes race). */
export function masterKey(dataDir: string): Buffer {
  const cached = masterKeys.get(dataDir)
  if (cached) return cached
  const path = join(dataDir, KEY_FILE)
  let key: Buffer
  try {
    key = parseKeyFile(path, readFileSync(path, 'utf8'))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    mkdirSync(dataDir, { recursive: true })
    const fresh = randomBytes(32)
    try {
      writeFileSync(path, `${fresh.toString('base64')}\n`, { flag: 'wx', mode: 0o600 })
      key = fresh
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
      key = parseKeyFile(path, readFileSync(path, 'utf8'))
    }
  }
  masterKeys.set(dataDir, key)
  return key
}

export function encryptPrivateKey(key: Buffer, pem: string, boundTo: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(boundTo, 'utf8'))
  const ct = Buffer.concat([cipher.update(pem, 'utf8'), cipher.final()])
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64')}`
}

export function decryptPrivateKey(key: Buffer, blob: string, boundTo: string): string {
  if (!blob.startsWith('v1:')) throw new Error('unknown DKIM key encoding')
  const raw = Buffer.from(blob.slice(3), 'base64')
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12))
  decipher.setAAD(Buffer.from(boundTo, 'utf8'))
  decipher.setAuthTag(raw.subarray(12, 28))
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
}

export interface DkimKeyPair {
  /** PKCS#8 PEM. */
  privateKeyPem: string
  /** Base64 of the SubjectPublicKeyInfo DER, as published in the `p=` tag. */
  publicKey: string
}

/** A fresh RSA-2048 key pair (generated off the event loop). */
export function generateDkimKeyPair(): Promise<DkimKeyPair> {
  return new Promise((resolve, reject) => {
    generateKeyPair('rsa', {
      modulusLength: 2048,
      publicExponent: 0x10001,
      publicKeyEncoding: { type: 'spki', format: 'der' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    }, (err, publicKey, privateKey) => {
      if (err) reject(err)
      else resolve({ privateKeyPem: privateKey, publicKey: Buffer.from(publicKey).toString('base64') })
    })
  })
}

/** A DKIM selector: `mailctl` + the year and month + 6 random hex characters (unique per key). */
export function newSelector(now: Date): string {
  const ym = `${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}`
  return `mailctl${ym}-${randomBytes(3).toString('hex')}`
}
