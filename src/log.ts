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
 * Lines are gathered and written once per event-loop turn (or at 64 KB): one write system call per turn
 * instead of one per request. Errors are written at once; the buffer is flushed on exit.
 */
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
  else if (!scheduled) { scheduled = true; setImmediate(flush) }
}

export function createLogger(level: Level | 'silent' = 'info', base: Record<string, unknown> = {}): Logger {
  const min = ORDER[level]
  const write = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < min) return
    const line = JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...fields }) + '\n'
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
