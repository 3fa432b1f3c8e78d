/** Email address syntax, shared by the mail layer and the modules (contacts re-export it). */

/** Trims and lower-cases an email address (docs/decisions.md, Requests: before storage and comparison). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

/** The email syntax HTTP bodies are validated with (Elysia's `format: 'email'`), for inputs that do not come through HTTP. */
const EMAIL_RE = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i

export function isEmail(email: string): boolean {
  return email.length <= 320 && EMAIL_RE.test(email)
}
