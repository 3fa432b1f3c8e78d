import { t, type Static } from 'elysia'

/** TypeBox models of POST /v1/send and the email record: request validation and the OpenAPI document. */

export const MAX_RECIPIENTS = 1000
export const MAX_ATTACHMENTS = 10
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
export const MAX_HEADER_VALUE = 998

const Email = t.String({ format: 'email', maxLength: 320, error: 'Invalid email' })
const DisplayName = t.String({ maxLength: 255, pattern: '^[^\\r\\n]*$', error: 'a display name is at most 255 characters without line breaks' })
const Recipient = t.Union([Email, t.Object({ name: t.Optional(t.Union([DisplayName, t.Null()])), email: Email })], {
  error: 'a recipient is an email address or {name, email}',
})

export const Attachment = t.Object({
  filename: t.String({ minLength: 1, maxLength: 255, pattern: '^[^\\r\\n]*$', error: 'filename must be 1-255 characters without line breaks' }),
  content: t.String({ minLength: 1, description: 'Base64 of the file' }),
  contentType: t.Optional(t.String({ maxLength: 255, pattern: '^[\\w.+-]+/[\\w.+-]+$', error: 'contentType must be a MIME type such as application/pdf' })),
  contentId: t.Optional(t.String({ minLength: 1, maxLength: 255, pattern: '^[^\\s<>]+$', error: 'contentId must not contain spaces or angle brackets' })),
  disposition: t.Optional(t.Union([t.Literal('attachment'), t.Literal('inline')], { error: 'disposition must be attachment or inline' })),
}, { description: 'contentType defaults to one guessed from the filename; inline attachments need a contentId (referenced as cid:<contentId>)' })

export const SendBody = t.Object({
  to: t.Union([Recipient, t.Array(Recipient, { minItems: 1, maxItems: MAX_RECIPIENTS })], {
    description: `A recipient or an array of up to ${MAX_RECIPIENTS}; each gets its own contact upsert, rendering and email (no batch semantics)`,
    error: `to must be an email address, {name, email}, or an array of 1-${MAX_RECIPIENTS} of them`,
  }),
  subject: t.Optional(t.String({ minLength: 1, maxLength: 998, pattern: '^[^\\r\\n]*$', error: 'subject must be 1-998 characters without line breaks', description: 'Required unless template is given; Handlebars' })),
  body: t.Optional(t.String({ minLength: 1, error: 'body must be a non-empty string', description: 'HTML (or Markdown, see `type`) with Handlebars variables; required unless template is given' })),
  type: t.Optional(t.UnionEnum(['html', 'markdown'], {
    error: 'type must be "html" or "markdown"',
    description: 'How the body is written (the official SDK sends it). `html` (the default): the body is HTML. `markdown`: the body (given, or the template\'s) is Markdown (CommonMark with GitHub\'s extensions), rendered to HTML after its variables are filled in; variable values are always inserted as text, never as Markdown or HTML, and `{{{value}}}` is escaped like `{{value}}`. Raw HTML written in the Markdown itself is kept.',
  })),
  template: t.Optional(t.String({ format: 'uuid', error: 'template must be a template id (uuid)', description: 'Template id: supplies subject, body, from, fromName, replyTo and its kind (TRANSACTIONAL or MARKETING, not the body format `type`); explicit fields override' })),
  from: t.Optional(t.Union([t.String({ minLength: 3, maxLength: 400 }), t.Object({ name: t.Optional(t.Union([DisplayName, t.Null()])), email: Email })], {
    error: 'from must be an email address, "Name <email>", or {name, email}',
    description: 'Required unless the template has one; its domain must be verified for the project',
  })),
  name: t.Optional(DisplayName),
  subscribed: t.Optional(t.Boolean({ description: 'New contacts default to false; existing contacts keep their state unless given' })),
  data: t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: 'Template variables and contact updates (contact data rules; {value, persistent: false} is used for this email only)' })),
  headers: t.Optional(t.Record(t.String(), t.String(), { description: 'Extra headers; names printable ASCII without ":" and values <= 998 characters, no CR or LF in either. From, To, Subject, Date, Message-ID and the MIME structure headers cannot be set.' })),
  reply: t.Optional(Email),
  attachments: t.Optional(t.Array(Attachment, { maxItems: MAX_ATTACHMENTS, error: `at most ${MAX_ATTACHMENTS} attachments` })),
}, { description: 'Unknown fields are ignored. Deprecated: name (use from: {name, email}).' })
export type SendBody = Static<typeof SendBody>

const ContactRef = t.Object({ id: t.String(), email: t.String() })

export const SendResult = t.Object({
  success: t.Literal(true),
  data: t.Object({
    emails: t.Array(t.Object({
      contact: ContactRef,
      email: t.Optional(t.String({ description: 'Id of the created email; absent when the recipient is suppressed' })),
      status: t.String({
        description: '"queued": the email is durably queued. "suppressed": the address is on the project\'s suppression list (see /suppressions), so no email was created or sent',
      }),
      reason: t.Optional(t.String({ description: 'Suppressed recipients only: bounce, complaint or manual' })),
    }), { description: 'One entry per recipient, in request order' }),
    timestamp: t.String({ format: 'date-time' }),
  }),
}, { description: 'Answered once every email is durably queued.' })

export const EmailRecord = t.Object({
  id: t.String(),
  contactId: t.Union([t.String(), t.Null()]),
  templateId: t.Union([t.String(), t.Null()]),
  campaignId: t.Union([t.String(), t.Null()]),
  sourceType: t.String({ description: 'send, campaign, workflow, relay, test, or system (verification, password-reset and invitation mail from MAILCTL_SYSTEM_FROM)' }),
  type: t.String({ description: 'TRANSACTIONAL, MARKETING or HEADLESS' }),
  messageId: t.String(),
  from: t.String(),
  fromName: t.Union([t.String(), t.Null()]),
  to: t.String(),
  toName: t.Union([t.String(), t.Null()]),
  replyTo: t.Union([t.String(), t.Null()]),
  subject: t.String(),
  status: t.String({ description: 'PENDING, SENDING, SENT, DELIVERED, OPENED, CLICKED, BOUNCED, COMPLAINED or FAILED; only moves forward' }),
  attempts: t.Integer(),
  lastReply: t.Union([t.String(), t.Null()], { description: 'Last SMTP reply (or error) of a delivery attempt' }),
  deliveredTo: t.Union([t.String(), t.Null()], { description: 'The server that accepted the message' }),
  bounceType: t.Union([t.String(), t.Null()], { description: 'hard or soft' }),
  sentAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  deliveredAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  openedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  clickedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  bouncedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  complainedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  failedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
})
export type EmailRecord = Static<typeof EmailRecord>

/** GET /emails/:id: the record, and where the email is in delivery (src/mail/outbound/queue-repo.ts, deliveryStateOf). */
export const EmailDetail = t.Composite([EmailRecord, t.Object({
  deliveryState: t.UnionEnum(['QUEUED', 'SENDING', 'WAITING_RETRY', 'DONE'], {
    description: 'Where the email is in delivery (`status` stays SENDING from the first attempt to the outcome). QUEUED: waiting for its first attempt; SENDING: an attempt is under way; WAITING_RETRY: deferred by the receiving server (or a failed connection), tried again at `nextAttemptAt`; DONE: no longer queued, `status` is the outcome',
  }),
  nextAttemptAt: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the next attempt is due (WAITING_RETRY, or a QUEUED email due later); null otherwise' }),
})])
export type EmailDetail = Static<typeof EmailDetail>

export const IdParams = t.Object({ id: t.String() })

export const EmailAttempt = t.Object({
  attempt: t.Integer({ description: 'The attempt\'s number, from 1' }),
  at: t.String({ format: 'date-time' }),
  outcome: t.UnionEnum(['deferred', 'accepted', 'captured', 'bounced', 'failed'], { description: 'deferred: a temporary refusal (tried again later); accepted: a server answered 250; captured: stored by MAILCTL_OUTBOUND=capture; bounced: refused for good; failed: it could not be sent for a reason on our side' }),
  host: t.Union([t.String(), t.Null()], { description: 'The server that answered' }),
  reply: t.Union([t.String(), t.Null()], { description: 'Its SMTP reply (or, for failed, the reason)' }),
  smtpCode: t.Union([t.Integer(), t.Null()]),
  enhancedCode: t.Union([t.String(), t.Null()]),
  nextAttemptAt: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'Deferrals: when it was to be tried again' }),
  tls: t.Union([t.Boolean(), t.Null()], { description: 'Whether the session that carried the reply was encrypted (STARTTLS or implicit TLS); null when not recorded' }),
  tlsNote: t.Union([t.String(), t.Null()], { description: 'Why it went in clear: the server did not offer STARTTLS, refused it, or its TLS handshake failed (opportunistic TLS then goes on in clear)' }),
})

export const EmailAttempts = t.Object({
  data: t.Array(EmailAttempt, { description: 'Oldest first' }),
  attempts: t.Integer({ description: 'Delivery attempts the email has had (its record\'s `attempts`)' }),
  complete: t.Boolean({ description: 'Every attempt is listed with its own reply. False for mail whose earlier attempts were made before mailctl kept them (only the last reply was kept then)' }),
})
export type EmailAttempts = Static<typeof EmailAttempts>

export const EmailHeaders = t.Object({
  raw: t.String({ description: 'The header section, one line per header (folded lines as built)' }),
  fields: t.Array(t.Object({ name: t.String(), value: t.String() }), { description: 'The same headers, unfolded, in order' }),
  note: t.String({ description: 'How the headers were obtained' }),
})
export type EmailHeaders = Static<typeof EmailHeaders>
