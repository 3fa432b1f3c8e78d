import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { invalidField } from '../../errors'
import { authPlugin } from '../../http/auth'
import { EmailAttempts, EmailDetail, EmailHeaders, IdParams, SendBody, SendResult } from './model'
import * as service from './service'

const secret = [{ secretKey: [] }]

/** POST /v1/send, GET /emails/:id, /emails/:id/attempts and /emails/:id/headers (secret key). The activity feed lists emails: src/modules/activity. */
export function emailsRoutes(deps: Deps) {
  const send = new Elysia({ prefix: '/v1' }).use(authPlugin(deps))
    .post('/send', ({ ctx, body, headers }) => service.sendEmails(ctx, body, headers['idempotency-key']), {
      apiKey: 'secret',
      body: SendBody,
      // Elysia would coerce a string `data` into an object of characters: refuse anything but an object.
      transform: ({ body }) => {
        const b = body as { data?: unknown } | null
        if (b && typeof b === 'object' && b.data !== undefined && b.data !== null && (typeof b.data !== 'object' || Array.isArray(b.data))) {
          throw invalidField('data', 'data: Expected an object of template variables and contact fields', 'invalid_type', b.data)
        }
      },
      // Documented, not validated at run time: this is the hot path of sending (tests check the shape).
      detail: {
        responses: { 200: { description: 'Every email is durably queued', content: { 'application/json': { schema: SendResult } } } },
        tags: ['send'],
        summary: 'Send a transactional email',
        description: [
          'Each recipient of `to` is processed one after another: its contact is created or updated (new contacts are unsubscribed unless `subscribed` is true), the subject and body are rendered with its data, and an email is queued. The answer comes once every email is durably queued; delivery follows (MAILCTL_OUTBOUND).',
          'Addresses on the suppression list (hard bounces, complaints, manual entries; see /suppressions) get no email: each has `status: "suppressed"` and the `reason` in `data.emails`, and no `email` id.',
          'Errors: 401 INVALID_API_KEY (public key), 403 for an unverified sender domain, 404 for an unknown template, 409 IDEMPOTENCY_KEY_REUSED, 409 CONFLICT when other requests deleted the contact of a recipient while it was written, or the write deadlocked with theirs, three times over (send it again), 413 PAYLOAD_TOO_LARGE (attachments above 10 MB in total, a message above 40 MB), 422 VALIDATION_ERROR (header injection: code header_injection).',
          'Marketing templates get RFC 8058 one-click List-Unsubscribe headers; transactional mail does not unless the caller sets List-Unsubscribe in `headers`.',
        ].join('\n\n'),
        security: secret,
        parameters: [{ in: 'header', name: 'Idempotency-Key', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 }, description: '1-255 printable ASCII; a reused key answers 409 and sends nothing' }],
      },
    })
  const records = new Elysia().use(authPlugin(deps))
    .get('/emails/:id', ({ ctx, params }) => service.getEmail(ctx, params.id), {
      apiKey: 'secret', params: IdParams, response: { 200: EmailDetail },
      detail: {
        tags: ['send'], summary: 'One email: its delivery status and last SMTP reply', security: secret,
        description: '`deliveryState` and `nextAttemptAt` say where it is in delivery: a deferred email keeps `status` SENDING and is WAITING_RETRY until `nextAttemptAt`.',
      },
    })
    .get('/emails/:id/attempts', ({ ctx, params }) => service.getEmailAttempts(ctx, params.id), {
      apiKey: 'secret', params: IdParams, response: { 200: EmailAttempts },
      detail: {
        tags: ['send'], summary: 'The delivery attempts of one email, each with its SMTP reply', security: secret,
        description: 'Oldest first: each deferral (a 4xx answer, a connection that failed) and the final outcome (accepted, bounced, failed), with the server that answered and its reply. Opens, clicks and later bounce reports: GET /activity?emailId=.',
      },
    })
    .get('/emails/:id/headers', ({ ctx, params }) => service.getEmailHeaders(ctx, params.id), {
      apiKey: 'secret', params: IdParams, response: { 200: EmailHeaders },
      detail: {
        tags: ['send'], summary: 'The headers of one email as it is sent', security: secret,
        description: 'Rebuilt from the stored email the way the delivery pipeline builds it (the message itself is not kept): From, To, Subject, Date, Message-ID, List-Unsubscribe, Feedback-ID, custom headers and the MIME headers. The DKIM-Signature added at delivery is not part of it.',
      },
    })

  return new Elysia().use(send).use(records)
}
