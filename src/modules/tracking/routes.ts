import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { notFound } from '../../errors'
import { LINK_PATHS } from '../../mail/links'
import { clickTarget, openPixel, type EngagementMeta } from './service'

/** A transparent 1x1 GIF (43 bytes). */
export const PIXEL_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64')

const NO_STORE = {
  'cache-control': 'no-store, no-cache, must-revalidate, private, max-age=0',
  pragma: 'no-cache',
  expires: '0',
}

const TokenParams = t.Object({ token: t.String({ description: 'Signed token (src/mail/links.ts)' }) })

function meta(request: Request): EngagementMeta {
  return { userAgent: request.headers.get('user-agent') }
}

/**
 * Open pixel and click redirect at the public URL (no key: the signed token is the authorisation).
 * A forged, altered or truncated token answers 404 (NOT_FOUND); a click never redirects anywhere but the
 * target signed into its token.
 */
export function trackingRoutes(deps: Deps) {
  return new Elysia()
    .get(`${LINK_PATHS.open}/:token`, async ({ params, request }) => {
      const hit = await openPixel(deps, params.token, meta(request))
      if (!hit) throw notFound('link')
      return new Response(new Uint8Array(PIXEL_GIF), { headers: { 'content-type': 'image/gif', 'content-length': String(PIXEL_GIF.length), ...NO_STORE } })
    }, {
      params: TokenParams,
      detail: {
        tags: ['tracking'], summary: 'Open pixel',
        description: 'A 1x1 transparent GIF, never cached. Records email.open (isFirstOpen true once per email); the first open moves the email to OPENED. 404 for a forged token.',
      },
    })
    .get(`${LINK_PATHS.click}/:token`, async ({ params, request }) => {
      const target = await clickTarget(deps, params.token, meta(request))
      if (!target) throw notFound('link')
      return new Response(null, { status: 302, headers: { location: target, ...NO_STORE } })
    }, {
      params: TokenParams,
      detail: {
        tags: ['tracking'], summary: 'Click redirect',
        description: '302 to the link target signed into the token. Records email.click with the link (isFirstClick true once per email); the first click moves the email to CLICKED. 404 for a forged or altered token: never an open redirect.',
      },
    })
}
