import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { tooLarge } from '../../errors'
import { NotificationResult } from './model'
import { handleNotification } from './service'

/** SNS messages are at most 256 KB of Message plus the envelope. */
export const MAX_NOTIFICATION_BYTES = 512 * 1024

/** Marks a body over the limit (an error thrown while parsing would be reported as a parse error). */
const TOO_LARGE = Symbol('too large')

/** The body as text whatever the content type (SNS posts JSON as text/plain), capped. */
async function rawText({ request }: { request: Request }): Promise<string | typeof TOO_LARGE> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > MAX_NOTIFICATION_BYTES) return TOO_LARGE
  if (!request.body) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = request.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > MAX_NOTIFICATION_BYTES) {
      await reader.cancel()
      return TOO_LARGE
    }
    chunks.push(value)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

/** POST /webhooks/notifications (no key: the SNS signature is the authentication). */
export function webhooksRoutes(deps: Deps) {
  return new Elysia({ prefix: '/webhooks' })
    .post('/notifications', ({ body }) => {
      if (body === TOO_LARGE) throw tooLarge(`Notification bodies are limited to ${MAX_NOTIFICATION_BYTES} bytes`)
      return handleNotification(deps, typeof body === 'string' ? body : '')
    }, {
      parse: rawText,
      response: { 200: NotificationResult },
      detail: {
        tags: ['webhooks'],
        summary: 'Amazon SES notifications via SNS',
        description: 'For installs that relay through Amazon SES: subscribe this URL (HTTPS) to the SNS topic of the SES configuration set. '
          + 'The SNS signature (SignatureVersion 1 and 2) is verified against the certificate at SigningCertURL, which must be https on sns.<region>.amazonaws.com; '
          + 'a SubscriptionConfirmation is confirmed by a GET of its SubscribeURL. Bounce (Permanent: hard, else soft), Complaint and Delivery notifications '
          + 'change the email found by its Message-ID, with the same events and suppression rules as inbound bounces; a redelivered notification changes nothing. '
          + '400 malformed, 403 bad signature or untrusted URL, 500 when the certificate or confirmation URL cannot be fetched (SNS retries).',
      },
    })
}
