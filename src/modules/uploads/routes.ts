import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { tooLarge } from '../../errors'
import { authPlugin } from '../../http/auth'
import * as service from './service'

const tags = ['uploads']

export const UploadBody = t.Object({ file: t.File({ description: 'PNG, JPEG, GIF or WebP (checked from the content); at most MAILCTL_UPLOAD_MAX_BYTES (default 5 MB)' }) })
export const Uploaded = t.Object({
  url: t.String({ description: 'Public URL of the image, for template bodies' }),
  contentType: t.String(),
  size: t.Integer(),
})

/** POST /uploads/image (secret key) and GET /uploads/:name (public). */
export function uploadsRoutes(deps: Deps) {
  const upload = new Elysia({ prefix: '/uploads' }).use(authPlugin(deps))
    .post('/image', ({ ctx, body }) => service.uploadImage(ctx, body.file), {
      apiKey: 'secret', type: 'multipart/form-data', body: UploadBody, response: { 200: Uploaded },
      parse: ({ request }) => {
        const len = Number(request.headers.get('content-length') ?? 0)
        // The multipart envelope adds a little to the file; anything well beyond the cap is refused unread.
        if (len > deps.config.uploadMaxBytes + 64 * 1024) throw tooLarge(`Request of ${len} bytes: images are limited to ${deps.config.uploadMaxBytes} bytes`)
      },
      detail: { tags, summary: 'Upload an image for template bodies (multipart field `file`)', description: 'PNG, JPEG, GIF or WebP, decided from the bytes (SVG, HTML and anything else: 422). Answers {url, contentType, size}; the URL is public and unguessable.' },
    })
  const serve = new Elysia()
    .get('/uploads/:name', async ({ params }) => {
      const img = await service.readImage(deps, params.name)
      return new Response(img.body, { headers: service.imageHeaders(img.contentType, img.size) })
    }, {
      params: t.Object({ name: t.String() }),
      detail: { tags, summary: 'An uploaded image (public)', description: 'Served with its type, X-Content-Type-Options: nosniff and a Content-Security-Policy that lets nothing run; from the data dir, or streamed from the bucket of MAILCTL_S3_URL (502 BAD_GATEWAY when the bucket fails).' },
    })
  return new Elysia().use(upload).use(serve)
}
