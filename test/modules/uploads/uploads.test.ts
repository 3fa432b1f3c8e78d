import { beforeAll, expect, test } from 'bun:test'
import { sniffImage } from '../../../src/modules/uploads/service'
import { forEachStore } from '../../helpers/env'

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0'), Buffer.alloc(32, 1), Buffer.from([0xff, 0xd9])])
const GIF = Buffer.concat([Buffer.from('GIF89a'), Buffer.from([1, 0, 1, 0, 0, 0, 0]), Buffer.from(';')])
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([26, 0, 0, 0]), Buffer.from('WEBPVP8L'), Buffer.alloc(14, 0)])
const HTML = Buffer.from('<html><body><script>alert(document.cookie)</script></body></html>')
const SVG = Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="1" height="1"/></svg>')

function form(bytes: Uint8Array, filename: string, type = 'image/png'): FormData {
  const f = new FormData()
  f.append('file', new File([new Uint8Array(bytes)], filename, { type }))
  return f
}

test('sniffImage decides from the bytes', () => {
  expect(sniffImage(PNG)).toBe('image/png')
  expect(sniffImage(JPEG)).toBe('image/jpeg')
  expect(sniffImage(GIF)).toBe('image/gif')
  expect(sniffImage(WEBP)).toBe('image/webp')
  expect(sniffImage(HTML)).toBeNull()
  expect(sniffImage(SVG)).toBeNull()
  expect(sniffImage(new Uint8Array())).toBeNull()
  expect(sniffImage(Buffer.from('RIFF\0\0\0\0WAVEfmt '))).toBeNull()
})

forEachStore('image uploads', (env) => {
  let p: { id: string; secretKey: string; publicKey: string }
  beforeAll(async () => { p = await env.project() })

  const upload = (body: FormData, key: string | null = p.secretKey) => env.request('POST', '/uploads/image', { key, raw: body })
  const pathOf = (url: string) => new URL(url).pathname

  test('PNG, JPEG, GIF and WebP are stored under an unguessable name and served with their type, nosniff and a CSP', async () => {
    const names = new Set<string>()
    for (const [bytes, type, ext] of [[PNG, 'image/png', 'png'], [JPEG, 'image/jpeg', 'jpg'], [GIF, 'image/gif', 'gif'], [WEBP, 'image/webp', 'webp']] as const) {
      // The name and declared type say PNG every time: the content decides.
      const res = await upload(form(bytes, 'photo.png'))
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ contentType: type, size: bytes.length })
      expect(res.body.url).toMatch(new RegExp(`^http://localhost:3000/uploads/[A-Za-z0-9_-]{32}\\.${ext}$`))
      names.add(res.body.url)
      const got = await env.app.handle(new Request(`http://localhost${pathOf(res.body.url)}`))
      expect(got.status).toBe(200)
      expect(got.headers.get('content-type')).toBe(type)
      expect(got.headers.get('x-content-type-options')).toBe('nosniff')
      expect(got.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox")
      expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true)
    }
    expect(names.size).toBe(4)
    // The same file twice gets two names.
    const again = await upload(form(PNG, 'photo.png'))
    expect(names.has(again.body.url)).toBe(false)
  })

  test('HTML or SVG renamed to .png (or declared as image/png) is refused: 422 unsupported_image', async () => {
    for (const [bytes, name, type] of [[HTML, 'evil.png', 'image/png'], [SVG, 'logo.png', 'image/png'], [SVG, 'logo.svg', 'image/svg+xml'], [Buffer.from('plain text'), 'a.gif', 'image/gif']] as const) {
      const res = await upload(form(bytes, name, type))
      expect(res.status).toBe(422)
      expect(res.body.error.code).toBe('VALIDATION_ERROR')
      expect(res.body.error.errors[0]).toMatchObject({ field: 'file', code: 'unsupported_image' })
    }
  })

  test('no file -> 422; unknown or malformed names -> 404', async () => {
    const empty = new FormData()
    empty.append('other', 'x')
    expect((await upload(empty)).status).toBe(422)
    for (const path of ['/uploads/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png', '/uploads/..%2F..%2Fmailctl.db', '/uploads/test.db', '/uploads/.x.png.tmp']) {
      const res = await env.request('GET', path)
      expect([path, res.status]).toEqual([path, 404])
    }
  })

  test('security: no key 401, a public key 401 INVALID_API_KEY', async () => {
    expect((await upload(form(PNG, 'a.png'), null)).status).toBe(401)
    const pub = await upload(form(PNG, 'a.png'), p.publicKey)
    expect(pub.status).toBe(401)
    expect(pub.body.error.code).toBe('INVALID_API_KEY')
  })
})

forEachStore('image uploads, size cap', (env) => {
  test('an image over MAILCTL_UPLOAD_MAX_BYTES -> 413 PAYLOAD_TOO_LARGE', async () => {
    const p = await env.project()
    const big = Buffer.concat([PNG.subarray(0, 16), Buffer.alloc(3000, 7)])
    const res = await env.request('POST', '/uploads/image', { key: p.secretKey, raw: form(big, 'big.png') })
    expect(res.status).toBe(413)
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE')
    const small = await env.request('POST', '/uploads/image', { key: p.secretKey, raw: form(PNG, 'small.png') })
    expect(small.status).toBe(200)
  })
}, { uploadMaxBytes: 2048 })
