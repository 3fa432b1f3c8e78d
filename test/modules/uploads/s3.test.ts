import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { loadConfig } from '../../../src/config'
import { uploadsCheck } from '../../../src/modules/uploads/service'
import * as repo from '../../../src/modules/uploads/repo'
import { forEachStore } from '../../helpers/env'

/**
 * Uploads kept in an S3-compatible bucket (MAILCTL_S3_URL), against a small fake S3 on 127.0.0.1: it keeps
 * objects in memory by path (`/<bucket>/<key>`), answers PUT, GET, HEAD and DELETE like S3 (XML errors), and
 * refuses any request without an AWS Signature V4 Authorization header for its access key.
 */

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')
const GIF = Buffer.concat([Buffer.from('GIF89a'), Buffer.from([1, 0, 1, 0, 0, 0, 0]), Buffer.from(';')])
const ACCESS_KEY = 'AKIDMAILCTLTEST'

interface Seen { method: string; path: string; authorization: string | null; contentType: string | null }
const objects = new Map<string, { body: Uint8Array<ArrayBuffer>; type: string }>()
const seen: Seen[] = []
const s3Error = (status: number, code: string) => new Response(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`, { status, headers: { 'content-type': 'application/xml' } })

const fakeS3 = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const path = decodeURIComponent(new URL(req.url).pathname)
    const authorization = req.headers.get('authorization')
    seen.push({ method: req.method, path, authorization, contentType: req.headers.get('content-type') })
    if (!authorization?.startsWith(`AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/`) || !/SignedHeaders=[^,]+, ?Signature=[0-9a-f]{64}$/.test(authorization)) return s3Error(403, 'AccessDenied')
    if (!path.startsWith('/media/')) return s3Error(404, 'NoSuchBucket')
    switch (req.method) {
      case 'PUT':
        objects.set(path, { body: new Uint8Array(await req.arrayBuffer()), type: req.headers.get('content-type') ?? 'application/octet-stream' })
        return new Response(null, { headers: { etag: '"1"' } })
      case 'DELETE':
        objects.delete(path)
        return new Response(null, { status: 204 })
      case 'GET': case 'HEAD': {
        const o = objects.get(path)
        if (!o) return req.method === 'HEAD' ? new Response(null, { status: 404 }) : s3Error(404, 'NoSuchKey')
        const headers = { 'content-type': o.type, 'content-length': String(o.body.length), etag: '"1"', 'last-modified': new Date(0).toUTCString() }
        return new Response(req.method === 'HEAD' ? null : o.body, { headers })
      }
      default:
        return s3Error(405, 'MethodNotAllowed')
    }
  },
})
afterAll(() => fakeS3.stop(true))

/** A port nothing listens on: the bucket of a server that is down. */
const downPort = (() => {
  const s = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
  const port = s.port
  s.stop(true)
  return port
})()

const S3_URL = `s3://${ACCESS_KEY}:se%2Fcret@127.0.0.1:${fakeS3.port}/media/imgs?tls=false`

function form(bytes: Uint8Array, filename: string, type = 'image/png'): FormData {
  const f = new FormData()
  f.append('file', new File([new Uint8Array(bytes)], filename, { type }))
  return f
}

forEachStore('image uploads in an S3 bucket', (env) => {
  let p: { id: string; secretKey: string; publicKey: string }
  beforeAll(async () => { p = await env.project() })
  const upload = (body: FormData) => env.request('POST', '/uploads/image', { key: p.secretKey, raw: body })
  const get = (url: string) => env.app.handle(new Request(`http://localhost${new URL(url).pathname}`))

  test('an upload goes to the bucket under its unguessable name (signed with the access key), not to the data dir, and is served from it with its headers', async () => {
    for (const [bytes, type] of [[PNG, 'image/png'], [GIF, 'image/gif']] as const) {
      const from = seen.length
      const res = await upload(form(bytes, 'photo.png'))
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ contentType: type, size: bytes.length })
      const name = new URL(res.body.url).pathname.replace('/uploads/', '')
      expect(res.body.url).toBe(`http://localhost:3000/uploads/${name}`)
      const put = seen.slice(from).find((s) => s.method === 'PUT')
      expect(put).toMatchObject({ path: `/media/imgs/${name}`, contentType: type })
      expect(put?.authorization).toStartWith(`AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/`)
      expect(Buffer.from(objects.get(`/media/imgs/${name}`)?.body ?? []).equals(bytes)).toBe(true)

      const got = await get(res.body.url)
      expect(got.status).toBe(200)
      expect(got.headers.get('content-type')).toBe(type)
      expect(got.headers.get('content-length')).toBe(String(bytes.length))
      expect(got.headers.get('x-content-type-options')).toBe('nosniff')
      expect(got.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox")
      expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true)
      expect(seen.slice(from).some((s) => s.method === 'GET' && s.path === `/media/imgs/${name}`)).toBe(true)
    }
    expect(existsSync(join(env.config.dataDir, 'uploads'))).toBe(false)
  })

  test('a large image comes back whole: the stream continues after its first chunk', async () => {
    const big = Buffer.concat([PNG.subarray(0, 16), Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 31) % 251))])
    const res = await upload(form(big, 'big.png'))
    expect(res.status).toBe(200)
    const got = await get(res.body.url)
    expect(got.status).toBe(200)
    const back = Buffer.from(await got.arrayBuffer())
    expect(back.length).toBe(big.length)
    expect(back.equals(big)).toBe(true)
  })

  test('an image the bucket no longer has is 404, like an unknown name; HTML renamed to .png never reaches the bucket', async () => {
    const res = await upload(form(PNG, 'a.png'))
    const name = new URL(res.body.url).pathname.replace('/uploads/', '')
    objects.delete(`/media/imgs/${name}`)
    const gone = await env.request('GET', `/uploads/${name}`)
    expect(gone.status).toBe(404)
    expect(gone.body.error.code).toBe('NOT_FOUND')
    expect((await env.request('GET', '/uploads/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png')).status).toBe(404)

    const puts = seen.filter((s) => s.method === 'PUT').length
    const html = await upload(form(Buffer.from('<html><script>alert(1)</script></html>'), 'x.png'))
    expect(html.status).toBe(422)
    expect(seen.filter((s) => s.method === 'PUT').length).toBe(puts)
  })

  test('doctor: the bucket is the shared place of every node', async () => {
    const check = await uploadsCheck(env.config)
    expect(check.status).toBe('ok')
    expect(check.detail).toContain('bucket media')
    expect(check.detail).not.toContain('se/cret')
    expect(check.detail).not.toContain('se%2Fcret')
  })
}, { s3Url: S3_URL })

forEachStore('image uploads, S3 bucket down', (env) => {
  let p: { id: string; secretKey: string; publicKey: string }
  beforeAll(async () => { p = await env.project() })

  test('an upload answers 502 BAD_GATEWAY in the envelope and records nothing; an image cannot be read: 502', async () => {
    const res = await env.request('POST', '/uploads/image', { key: p.secretKey, raw: form(PNG, 'a.png') })
    expect(res.status).toBe(502)
    expect(res.body.success).toBe(false)
    expect(res.body.error).toMatchObject({ code: 'BAD_GATEWAY', statusCode: 502 })
    expect(res.body.error.message).toContain('S3 bucket')
    expect(res.body.error.message).not.toContain('se/cret')
    const u = env.store.t.uploads
    expect(await env.store.db.select().from(u).where(eq(u.projectId, p.id))).toHaveLength(0)

    const name = 'BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB.png'
    await env.store.tx((db) => repo.insert(env.store, db, { name, projectId: p.id, contentType: 'image/png', size: PNG.length, createdAt: new Date() }))
    const got = await env.request('GET', `/uploads/${name}`)
    expect(got.status).toBe(502)
    expect(got.body.error.code).toBe('BAD_GATEWAY')
  })

  test('doctor fails the uploads check when the bucket does not answer, without printing the secret', async () => {
    const check = await uploadsCheck(env.config)
    expect(check.status).toBe('fail')
    expect(check.detail).toContain('does not answer')
    expect(check.detail).not.toContain('se/cret')
  })
}, { s3Url: `s3://${ACCESS_KEY}:se%2Fcret@127.0.0.1:${downPort}/media?tls=false` })

test('doctor: on PostgreSQL without a bucket, several nodes need MAILCTL_S3_URL or a shared volume', async () => {
  const pg = loadConfig({ env: { DATABASE_URL: 'postgres://u@127.0.0.1:5432/mailctl', MAILCTL_DATA_DIR: '/tmp/mailctl-x' } })
  const check = await uploadsCheck(pg)
  expect(check.status).toBe('warn')
  expect(check.detail).toContain('MAILCTL_S3_URL')
  expect(check.detail).toContain('shared')
  const sqlite = await uploadsCheck(loadConfig({ env: { MAILCTL_DATA_DIR: '/tmp/mailctl-x' } }))
  expect(sqlite.status).toBe('ok')
})

test('MAILCTL_S3_URL is checked at start and names the setting', () => {
  for (const bad of ['http://k:s@h/b', 's3://k@h/b', 's3://k:s@h', 's3://k:s@h/b?tls=maybe']) {
    expect(() => loadConfig({ env: { MAILCTL_S3_URL: bad } })).toThrow('MAILCTL_S3_URL')
  }
  expect(loadConfig({ env: { MAILCTL_S3_URL: 's3://k:s@s3.example.com/b' } }).s3Url).toBe('s3://k:s@s3.example.com/b')
})
