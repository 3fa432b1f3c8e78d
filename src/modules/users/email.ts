/** docs/decisions.md, Requests: addresses are trimmed and lower-cased before storage and comparison. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}
