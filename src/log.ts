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
    const line = JSON.stringify({ time: isoNow(), level: lvl, msg, ...base, ...fields }) + '\n'
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

export function errorFields(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { error: err.message, stack: err.stack }
  return { error: String(err) }
}
