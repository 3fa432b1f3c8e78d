/** One JSON line per record on stdout (errors on stderr). */
export type Level = 'debug' | 'info' | 'warn' | 'error'
const ORDER: Record<Level | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
  child(fields: Record<string, unknown>): Logger
}

import { writeSync } from 'node:fs'

/**
 * Lines are gathered and written every FLUSH_MS (or at 64 KB): one write system call per few ms instead of
 * one per request (under load an event-loop turn often holds a single request). Errors are written at
 * once, with what is pending before them; the buffer is flushed on exit.
 */
const FLUSH_MS = 5
let pending = ''
let scheduled = false
function flush() {
  scheduled = false
  if (!pending) return
  const out = pending
  pending = ''
  try { writeSync(1, out) } catch { /* stdout closed */ }
}
process.on('exit', flush)
function bufferLine(line: string) {
  pending += line
  if (pending.length > 65_536) flush()
  else if (!scheduled) { scheduled = true; setTimeout(flush, FLUSH_MS).unref() }
}

/** The current time as ISO 8601, formatted once per millisecond. */
let isoMs = 0
let iso = ''
function isoNow(): string {
  const now = Date.now()
  if (now !== isoMs) { isoMs = now; iso = new Date(now).toISOString() }
  return iso
}

export function createLogger(level: Level | 'silent' = 'info', base: Record<string, unknown> = {}): Logger {
  const min = ORDER[level]
  const write = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < min) return
    const line = `${JSON.stringify({ time: isoNow(), level: lvl, msg, ...base, ...fields })}\n`
    if (lvl === 'error') { flush(); process.stderr.write(line) }
    else bufferLine(line)
  }
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (f) => createLogger(level, { ...base, ...f }),
  }
}

/** Characters kept of each string of an error's fields: a log line never holds a whole request body. */
export const MAX_LOGGED_CHARS = 2048

function cap(s: string, max = MAX_LOGGED_CHARS): string {
  return s.length <= max ? s : `${s.slice(0, max)}... [${s.length - max} more characters]`
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/**
 * An error as log fields: message, stack and cause (a driver's own error under drizzle's "Failed query"),
 * each capped at MAX_LOGGED_CHARS, since messages may quote the SQL's parameters: the request's values.
 * The stack's first line, the message again, is capped like the message; its frames get four times as much.
 */
export function errorFields(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { error: cap(String(err)) }
  const out: Record<string, unknown> = { error: cap(err.message) }
  if (err.stack) {
    const head = `${err.name}: ${err.message}`
    const frames = err.stack.startsWith(head) ? err.stack.slice(head.length) : null
    out.stack = frames === null ? cap(err.stack) : `${err.name}: ${cap(err.message)}${cap(frames, MAX_LOGGED_CHARS * 4)}`
  }
  if (err.cause !== undefined) out.cause = cap(message(err.cause))
  return out
}
