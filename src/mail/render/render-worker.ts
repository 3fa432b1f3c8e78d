/**
 * A render thread of pool.ts: renders one message at a time and answers; the pool terminates it when a
 * render outlives its deadline. It is also an entry point of `bun build --compile` (package.json
 * "build"), so it exists inside the compiled executable.
 */
import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'
import { AppError } from '../../errors'
import { renderEmail, validateTemplateSource } from './index'
import type { RenderReply, RenderRequest } from './pool'
import { RenderLimitError, TemplateSyntaxError } from './sandbox'

declare const self: Worker

/** Tenant templates yield the CPU to the main thread (HTTP, SMTP, commits) when both want it. */
const RENDER_NICE = 10

if (process.platform === 'linux') {
  try { setPriority(0, RENDER_NICE) } catch { /* not permitted: same priority as the main thread */ }
}

self.onmessage = (event: MessageEvent<RenderRequest>) => {
  const req = event.data
  const id = req.id
  let reply: RenderReply
  try {
    if (req.op === 'validate') {
      validateTemplateSource(req.input)
      reply = { id, ok: true, value: null }
    } else reply = { id, ok: true, value: renderEmail(req.src, req.vars) }
  } catch (err) {
    if (err instanceof AppError && err.code === 'VALIDATION_ERROR') reply = { id, ok: false, kind: 'validation', errors: err.opts.errors ?? [], message: err.message }
    else
    if (err instanceof RenderLimitError) reply = { id, ok: false, kind: 'limit', limit: err.limit, part: err.part, message: err.message }
    else if (err instanceof TemplateSyntaxError) reply = { id, ok: false, kind: 'syntax', message: err.message }
    else if (err instanceof RangeError) reply = { id, ok: false, kind: 'limit', limit: 'depth', part: 'body', message: `the template is nested too deeply to render (${err.message.split('\n')[0]})` }
    else reply = { id, ok: false, kind: 'error', message: err instanceof Error ? err.message : String(err) }
  }
  self.postMessage(reply)
}

/** This thread's id (Linux: /proc/thread-self is "<pid>/task/<tid>"), so the pool can read its CPU time. */
function threadId(): number | null {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    return Number.isInteger(tid) && tid > 0 ? tid : null
  } catch {
    return null
  }
}

// The pool counts a render's deadline from here: the thread's start-up is not the template's.
self.postMessage({ ready: true, tid: threadId() })
