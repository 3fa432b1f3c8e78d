import { randomBytes } from 'node:crypto'
import type { Config } from '../../config'
import type { Ctx, Deps } from '../../deps'
import { invalidField, notFound, tooLarge } from '../../errors'
import * as repo from './repo'
import { probeBucket, storageFor } from './storage'

/**
 * Images for template bodies (POST /uploads/image), served publicly at /uploads/<name>. The type is decided
 * from the bytes (PNG, JPEG, GIF, WebP); anything else, SVG and HTML included, is refused whatever its
 * name or declared type. The file is kept under an unguessable random name in <data dir>/uploads (one node,
 * or a volume shared by every node: `mailctl doctor` says so on PostgreSQL) or, with MAILCTL_S3_URL, in an
 * S3-compatible bucket (./storage.ts), and served from either with its own type, `nosniff` and a
 * Content-Security-Policy that lets nothing run.
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
  // The image first, then its row: a failed write leaves no row pointing at nothing.
  await storageFor(ctx.deps.config).put(name, bytes, type)
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

/**
 * GET /uploads/:name (public): the image as a stream (from the data dir or the bucket), its recorded type and
 * size; 404 for anything else, 502 BAD_GATEWAY when the bucket fails.
 */
export async function readImage(deps: Deps, name: string): Promise<{ body: ReadableStream<Uint8Array>; contentType: string; size: number }> {
  if (!NAME_RE.test(name)) throw notFound('image')
  const row = await repo.byName(deps.store, name)
  if (!row) throw notFound('image')
  const body = await storageFor(deps.config).open(name)
  if (!body) throw notFound('image')
  return { body, contentType: row.contentType, size: row.size }
}

/**
 * For `mailctl doctor`: where uploads are kept. On PostgreSQL (several nodes may share the database) the
 * data dir must be one volume shared by every node, or MAILCTL_S3_URL must name a bucket; a bucket that does
 * not answer fails the check.
 */
export async function uploadsCheck(config: Config): Promise<{ name: string; status: 'ok' | 'warn' | 'fail'; detail: string }> {
  const storage = storageFor(config)
  if (storage.kind === 's3') {
    const problem = await probeBucket(config)
    if (problem) return { name: 'uploads', status: 'fail', detail: `images are kept in the ${storage.where}, which does not answer: ${problem}` }
    return { name: 'uploads', status: 'ok', detail: `images are kept in the ${storage.where}, shared by every node` }
  }
  if (config.databaseUrl.startsWith('postgres')) {
    return { name: 'uploads', status: 'warn', detail: `images are kept in ${storage.where}: with several nodes, set MAILCTL_S3_URL to an S3-compatible bucket, or make this directory one volume shared by all of them` }
  }
  return { name: 'uploads', status: 'ok', detail: `images are kept in ${storage.where}` }
}
