/**
 * The dashboard's one client of the HTTP API: the same routes API clients call. Session routes
 * (/auth/*, /users/@me/*, /projects/:id/*) go with the cookie alone; the routes that take a secret key go
 * with the cookie plus `X-Project-Id` (docs/decisions.md, The dashboard). It never imports server code.
 */

export interface FieldError { field: string; message: string; code: string }

/** An API error envelope (`{success: false, error: {code, message, errors?}}`) or a flat `{error}`. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly fields: FieldError[] = []) {
    super(message)
  }
  /** The message of the field at fault, if the API named it. */
  field(name: string): string | undefined {
    return this.fields.find((f) => f.field === name || f.field.startsWith(`${name}.`))?.message
  }
}

export interface CallOptions {
  /** JSON-encoded; a FormData is sent as multipart as it is. */
  body?: unknown
  /** The project the call acts on: sent as X-Project-Id (the routes that take a secret key). */
  project?: string
  signal?: AbortSignal
}

export async function call<T>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (opts.project) headers['x-project-id'] = opts.project
  const form = opts.body instanceof FormData
  if (opts.body !== undefined && !form) headers['content-type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(path, {
      method, headers, credentials: 'same-origin', signal: opts.signal,
      body: opts.body === undefined ? undefined : form ? (opts.body as FormData) : JSON.stringify(opts.body),
    })
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err
    throw new ApiError(0, 'NETWORK', 'The server did not answer. Check that mailctl is running, then try again.')
  }
  if (res.status === 204) return undefined as T
  const text = await res.text()
  let body: unknown = null
  try { body = text ? JSON.parse(text) : null } catch { body = text }
  if (!res.ok) throw toError(res.status, body)
  return body as T
}

function toError(status: number, body: unknown): ApiError {
  const b = body as { error?: { code?: string; message?: string; errors?: FieldError[] } | string } | null
  if (b && typeof b.error === 'object' && b.error) {
    return new ApiError(status, b.error.code ?? 'ERROR', b.error.message ?? `Request failed (${status})`, b.error.errors ?? [])
  }
  if (b && typeof b.error === 'string') return new ApiError(status, 'ERROR', b.error)
  return new ApiError(status, 'ERROR', `Request failed (${status})`)
}

export const get = <T>(path: string, project?: string) => call<T>('GET', path, { project })
export const post = <T>(path: string, body?: unknown, project?: string) => call<T>('POST', path, { body: body ?? {}, project })
export const patch = <T>(path: string, body: unknown, project?: string) => call<T>('PATCH', path, { body, project })
export const del = <T = void>(path: string, project?: string) => call<T>('DELETE', path, { project })

// The shapes the dashboard reads (JSON: dates are strings).
export type Role = 'OWNER' | 'ADMIN' | 'MEMBER'
export interface User { id: string; email: string; name: string | null; emailVerified: boolean; createdAt: string }
export interface Project {
  id: string; name: string; publicKey: string; disabled: boolean; trackingEnabled: boolean
  /** The project's own campaign sending rate (messages per second); null: the server's default. */
  sendRatePerSecond: number | null
  /** The sender filled in for new templates and campaigns (settings page). */
  defaultFrom: string | null; defaultFromName: string | null; defaultReplyTo: string | null; role: Role
  createdAt: string; updatedAt: string
}
export interface ProjectWithSecret extends Project { secretKey: string }
export interface Member {
  id: string; userId: string | null; email: string; name: string | null; role: Role
  status: 'active' | 'invited'; createdAt: string; expiresAt?: string
}
/** A pending invitation to the signed-in user; projectName is the inviting project's own (untrusted) text. */
export interface Invitation {
  id: string; projectId: string; projectName: string; role: Role; invitedBy: string | null; createdAt: string; expiresAt: string
}
export interface InvitationAccepted { projectId: string; role: Role }
export interface PublicConfig { version: string; features: { signup: { disabled: boolean } } }
export interface SetupState { projectId: string; steps: Array<{ id: string; title: string; done: boolean }>; completed: boolean }
export interface DnsRecord {
  type: 'TXT' | 'MX'; name: string; value: string; priority?: number
  purpose: 'DKIM' | 'RETURN_PATH_MX' | 'RETURN_PATH_SPF' | 'DMARC'; required: boolean
  status: 'verified' | 'pending' | 'failed'; reason: string | null
}
export interface Domain {
  id: string; projectId: string; domain: string; verified: boolean; allowSubdomains: boolean
  records: DnsRecord[]; createdAt: string; lastCheckedAt: string | null
}
export interface Contact {
  id: string; email: string; subscribed: boolean; data: Record<string, unknown> | null; createdAt: string; updatedAt: string
}
export interface Job {
  id: string; type: string; status: 'queued' | 'running' | 'completed' | 'failed'; progress: number; total: number; processed: number
  result: null | { created: number; updated: number; skipped: number; failed: number; errors: Array<{ row: number; message: string }> }
  error?: string
}
export interface ContactPage { data: Contact[]; cursor: string | null; hasMore: boolean; total: number }

/** What a role may do (docs/decisions.md, Member roles), for showing or hiding controls; the API enforces it. */
export function canManage(role: Role | undefined): boolean {
  return role === 'OWNER' || role === 'ADMIN'
}
