/**
 * The one error type of mailctl. Services throw it; HTTP (src/http/errors.ts), the CLI and the SMTP
 * relay each translate it. Codes and statuses are those of docs/decisions.md, Errors.
 */
export type ErrorCode =
  | 'BAD_REQUEST' | 'UNAUTHORIZED' | 'INVALID_API_KEY' | 'FORBIDDEN' | 'PROJECT_DISABLED' | 'NOT_FOUND'
  | 'CONFLICT' | 'IDEMPOTENCY_KEY_REUSED' | 'PAYLOAD_TOO_LARGE' | 'VALIDATION_ERROR' | 'RATE_LIMIT_EXCEEDED'
  | 'BILLING_LIMIT_EXCEEDED' | 'INTERNAL_SERVER_ERROR'
  /** A third party this server relies on (the payment provider, the uploads bucket) failed or did not answer. */
  | 'BAD_GATEWAY'
  /** The store's disk is full (SQLite's file system, PostgreSQL's disk_full): 503 with Retry-After. */
  | 'STORAGE_FULL'
  /** The database cannot be reached (PostgreSQL down or restarting, SQLite's write lock not free): 503 with Retry-After. */
  | 'DATABASE_UNAVAILABLE'

export const STATUS: Record<ErrorCode, number> = {
  BAD_REQUEST: 400, UNAUTHORIZED: 401, INVALID_API_KEY: 401, FORBIDDEN: 403, PROJECT_DISABLED: 403,
  NOT_FOUND: 404, CONFLICT: 409, IDEMPOTENCY_KEY_REUSED: 409, PAYLOAD_TOO_LARGE: 413, VALIDATION_ERROR: 422,
  RATE_LIMIT_EXCEEDED: 429, BILLING_LIMIT_EXCEEDED: 429, INTERNAL_SERVER_ERROR: 500,
  BAD_GATEWAY: 502, STORAGE_FULL: 503, DATABASE_UNAVAILABLE: 503,
}

export interface FieldError { field: string; message: string; code: string; received?: unknown }

export interface AppErrorOptions {
  status?: number
  errors?: FieldError[]
  details?: Record<string, unknown>
  suggestion?: string
  /** Answer with the flat `{error: message}` body that docs/decisions.md, Errors, keeps for three rejections. */
  flat?: boolean
  headers?: Record<string, string>
}

export class AppError extends Error {
  readonly status: number
  constructor(readonly code: ErrorCode, message: string, readonly opts: AppErrorOptions = {}) {
    super(message)
    this.status = opts.status ?? STATUS[code]
  }
}

export const badRequest = (message: string, opts?: AppErrorOptions) => new AppError('BAD_REQUEST', message, opts)
export const unauthorized = (message = 'Authentication required') => new AppError('UNAUTHORIZED', message)
export const forbidden = (message = 'You are not allowed to do this') => new AppError('FORBIDDEN', message)
export const notFound = (what: string) => new AppError('NOT_FOUND', `${what[0].toUpperCase()}${what.slice(1)} not found`)
export const conflict = (message: string, details?: Record<string, unknown>) => new AppError('CONFLICT', message, { details })
export const tooLarge = (message: string) => new AppError('PAYLOAD_TOO_LARGE', message)
/** The flat `{error}` rejections of docs/decisions.md, Errors (status 400). */
export const flatError = (message: string) => new AppError('BAD_REQUEST', message, { flat: true })
export const validation = (errors: FieldError[], message = 'Validation failed') =>
  new AppError('VALIDATION_ERROR', message, { errors })
/** One field-level validation failure. */
export const invalidField = (field: string, message: string, code = 'invalid', received?: unknown) =>
  validation([{ field, message, code, received }], message)
/** docs/decisions.md, Errors: an unverified sender domain answers 403 with the code INTERNAL_SERVER_ERROR (kept for compatibility). */
export const unverifiedDomain = (domain: string) =>
  new AppError('INTERNAL_SERVER_ERROR', `The domain ${domain} is not verified for this project`, {
    status: 403,
    suggestion: 'Add the domain under /domains and publish its DNS records, then verify it.',
  })
