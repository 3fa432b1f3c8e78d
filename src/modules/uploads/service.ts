import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../../config'
import type { Ctx, Deps } from '../../deps'
import { invalidField, notFound, tooLarge } from '../../errors'
import * as repo from './repo'

/**
 * Images for template bodies (POST /uploads/image), served publicly at /uploads/<name>. The type is decided
 * from the bytes (PNG, JPEG, GIF, WebP); anything else, SVG and HTML included, is refused whatever its
 * name or declared type. The file is kept under an unguessable random name in <data dir>/uploads (one node,
 * or a volume shared by every node: `mailctl doctor` says so on PostgreSQL), and served with its own type,
 * `nosniff` and a Content-Security-Policy that lets nothing run.
 */

export type ImageType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp'
const EXT: Record<ImageType, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' }
/** 32 characters of base64url (24 random bytes) and the extension of the sniffed type. */
export const NAME_RE = /^[A-Za-z0-9_-]{32}\.(png|jpg|gif|webp)$/

const startsWith = (b: Uint8Array, sig: readonly number[], at = 0) => b.length >= at + sig.length && sig.every((x, i) => b[at + i] === x)
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0))

/** The image type of the bytes by their signature, or null. */
export function sniffImage(b: Uint8Array): ImageType | null {
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png'
  if (startsWith(b, [0xff, 0xd8, 0xff])) return 'image/jpeg'
  if (startsWith(b, ascii('GIF87a')) || startsWith(b, ascii('GIF89a'))) return 'image/gif'
  if (startsWith(b, ascii('RIFF')) && startsWith(b, ascii('WEBP'), 8) && startsWith(b, ascii('VP8'), 12)) return 'image/webp'
  return null
}

export function uploadsDir(config: Config): string {
  return join(config.dataDir, 'uploads')
}

export interface UploadedFile { name: string; size: number; type: string; arrayBuffer(): Promise<ArrayBuffer> }

/** POST /uploads/image: checks, stores and answers the public URL. */
export async function uploadImage(ctx: Ctx, file: UploadedFile): Promise<{ url: string; contentType: ImageType; size: number }> {
  const max = ctx.deps.config.uploadMaxBytes
  if (file.size > max) throw tooLarge(`The image is ${file.size} bytes; uploads are limited to ${max} bytes`)
  const bytes = new Uint8Array(await file.arrayBuffer())
  if (bytes.length > max) throw tooLarge(`The image is ${bytes.length} bytes; uploads are limited to ${max} bytes`)
  const type = sniffImage(bytes)
  if (!type) throw invalidField('file', 'file: only PNG, JPEG, GIF and WebP images are accepted (checked from the content, not the name); SVG and HTML are refused', 'unsupported_image', file.type || undefined)
  const name = `${randomBytes(24).toString('base64url')}.${EXT[type]}`
  const dir = uploadsDir(ctx.deps.config)
  await mkdir(dir, { recursive: true })
  const tmp = join(dir, `.${name}.tmp`)
  await writeFile(tmp, bytes, { mode: 0o644 })
  await rename(tmp, join(dir, name))
  await ctx.store.tx((db) => repo.insert(ctx.store, db, { name, projectId: ctx.projectId, contentType: type, size: bytes.length, createdAt: ctx.now }))
  return { url: `${ctx.deps.config.publicUrl.replace(/\/$/, '')}/uploads/${name}`, contentType: type, size: bytes.length }
}

/** The headers of every served image: its own type, no sniffing, nothing may run or load from it. */
export function imageHeaders(type: string, size: number): Record<string, string> {
  return {
    'content-type': type,
    'content-length': String(size),
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'content-disposition': 'inline',
    'cache-control': 'public, max-age=31536000, immutable',
    'cross-origin-resource-policy': 'cross-origin',
  }
}

/** GET /uploads/:name (public): the bytes and their recorded type; 404 for anything else. */
export async function readImage(deps: Deps, name: string): Promise<{ bytes: ArrayBuffer; contentType: string }> {
  if (!NAME_RE.test(name)) throw notFound('image')
  const row = await repo.byName(deps.store, name)
  if (!row) throw notFound('image')
  try {
    const file = await readFile(join(uploadsDir(deps.config), name))
    return { bytes: file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer, contentType: row.contentType }
  } catch {
    throw notFound('image')
  }
}

/** For `mailctl doctor`: where uploads are kept, and that several nodes need that place shared. */
export function uploadsCheck(config: Config): { name: string; status: 'ok' | 'warn'; detail: string } {
  const dir = uploadsDir(config)
  if (config.databaseUrl.startsWith('postgres')) {
    return { name: 'uploads', status: 'warn', detail: `images are kept in ${dir}: with several nodes this must be one volume shared by all of them (an S3-compatible bucket is not supported yet)` }
  }
  return { name: 'uploads', status: 'ok', detail: `images are kept in ${dir}` }
}
