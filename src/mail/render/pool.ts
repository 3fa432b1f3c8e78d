/**
 * The render threads. A render that can be heavy (a Markdown body, whose parser is superlinear on some
 * inputs, or `{{#each}}`, whose work depends on the data) is posted to one of them instead of running on
 * the thread that serves HTTP; one that has used RENDER_TIMEOUT_MS of its thread's CPU time (read from
 * /proc on Linux, so a machine busy with other work does not shorten a render's budget; elsewhere
 * wall-clock time), or RENDER_WALL_MAX_MS of wall-clock time, is abandoned: its thread is terminated (the
 * only way to stop a synchronous loop) and the render refused with the `time` limit. Light renders
 * (no Markdown, no `{{#each}}`: linear in source and data, bounded by the output budget) stay inline, so
 * the common case costs no round trip.
 *
 * At most RENDER_THREADS threads, started on first use and ended after RENDER_IDLE_MS without work
 * (the process does not stay up for them). Jobs wait in one queue, first come first served.
 */
import { validation, type FieldError } from '../../errors'
import { isHeavy, renderEmail, renderRefusal, validateTemplateSource, type BodyFormat, type MessageSource, type RenderedEmail } from './index'
import { readFileSync } from 'node:fs'
import { onRenderThreadsStarted } from './threads'
import { RENDER_TIMEOUT_MS, RENDER_WALL_MAX_MS, RenderLimitError, TemplateSyntaxError, type RenderLimit, type TemplateVars } from './sandbox'

export interface SourceCheck { subject?: string | null; body?: string | null; format?: BodyFormat }
export type RenderRequest = { id: number; op: 'render'; src: MessageSource; vars: TemplateVars } | { id: number; op: 'validate'; input: SourceCheck }
export type RenderReply =
  | { id: number; ok: true; value: RenderedEmail | null }
  | { id: number; ok: false; kind: 'validation'; errors: FieldError[]; message: string }
  | { id: number; ok: false; kind: 'limit'; limit: RenderLimit; part: 'subject' | 'body' | null; message: string }
  | { id: number; ok: false; kind: 'syntax' | 'error'; message: string }

const RENDER_THREADS = 2
const RENDER_IDLE_MS = 5_000

const WORKER_ENTRY = import.meta.url.includes('/$bunfs/')
  ? './src/mail/render/render-worker.ts'
  : new URL('./render-worker.ts', import.meta.url).href

interface Job { id: number; req: RenderRequest; resolve(v: RenderedEmail | null): void; reject(e: Error): void }
/** `ready`: the thread has loaded its modules (its start-up is not counted in a render's deadline). */
interface Slot { worker: Worker; ready: boolean; tid: number | null; job: Job | null; timer: ReturnType<typeof setTimeout> | null }

function failure(reply: Extract<RenderReply, { ok: false }>): Error {
  if (reply.kind === 'limit') {
    const err = new RenderLimitError(reply.limit, reply.message)
    err.part = reply.part
    return err
  }
  if (reply.kind === 'syntax') return new TemplateSyntaxError(reply.message)
  if (reply.kind === 'validation') return validation(reply.errors, reply.message)
  return new Error(`render failed: ${reply.message}`)
}

class RenderPool {
  private slots: Slot[] = []
  private queue: Job[] = []
  private seq = 0
  private idle: ReturnType<typeof setTimeout> | null = null
  /** Renders abandoned at their deadline (diagnostics, tests). */
  timeouts = 0

  constructor(private readonly size: number, private readonly timeoutMs: number) {}

  render(src: MessageSource, vars: TemplateVars): Promise<RenderedEmail> {
    return this.run({ id: ++this.seq, op: 'render', src, vars }) as Promise<RenderedEmail>
  }

  validate(input: SourceCheck): Promise<void> {
    return this.run({ id: ++this.seq, op: 'validate', input }).then(() => undefined)
  }

  private run(req: RenderRequest): Promise<RenderedEmail | null> {
    return new Promise<RenderedEmail | null>((resolve, reject) => {
      this.queue.push({ id: req.id, req, resolve, reject })
      this.pump()
    })
  }

  private spawn(): Slot {
    const slot: Slot = { worker: new Worker(WORKER_ENTRY), ready: false, tid: null, job: null, timer: null }
    slot.worker.onmessage = (event: MessageEvent<RenderReply | { ready: true; tid: number | null }>) => {
      if ('ready' in event.data) {
        slot.ready = true
        slot.tid = event.data.tid
        this.pump()
        return
      }
      const job = slot.job
      if (!job || event.data.id !== job.id) return
      this.finish(slot)
      if (event.data.ok) job.resolve(event.data.value)
      else job.reject(failure(event.data))
      this.pump()
    }
    slot.worker.onerror = (event) => {
      const job = slot.job
      const err = new Error(`render thread failed: ${event.message}`)
      this.drop(slot)
      job?.reject(err)
      // A thread that fails before it is ready would fail again: the waiting jobs fail with it.
      if (!slot.ready) for (const j of this.queue.splice(0)) j.reject(err)
      this.pump()
    }
    this.slots.push(slot)
    return slot
  }

  private finish(slot: Slot) {
    if (slot.timer) clearTimeout(slot.timer)
    slot.timer = null
    slot.job = null
  }

  private drop(slot: Slot) {
    this.finish(slot)
    slot.worker.terminate()
    this.slots = this.slots.filter((s) => s !== slot)
  }

  private pump() {
    while (this.queue.length) {
      const slot = this.slots.find((s) => s.ready && !s.job)
      if (!slot) {
        // A thread that is still starting takes the next job when it is ready.
        if (this.slots.length < this.size && !this.slots.some((s) => !s.ready)) this.spawn()
        return
      }
      const job = this.queue.shift() as Job
      slot.job = job
      const s = slot
      const started = performance.now()
      const cpu0 = threadCpuMs(s.tid)
      const check = () => {
        const cpu = cpu0 === null ? null : threadCpuMs(s.tid)
        const used = cpu === null || cpu0 === null ? performance.now() - started : cpu - cpu0
        const wall = performance.now() - started
        if (used < this.timeoutMs && wall < RENDER_WALL_MAX_MS) {
          s.timer = setTimeout(check, Math.max(20, Math.min(this.timeoutMs - used, RENDER_WALL_MAX_MS - wall)))
          return
        }
        this.timeouts++
        this.drop(s)
        const err = new RenderLimitError('time', `rendering took longer than ${this.timeoutMs.toLocaleString('en-US')} ms and was stopped (the time budget of a render)`)
        err.part = 'body'
        job.reject(err)
        this.pump()
      }
      s.timer = setTimeout(check, this.timeoutMs)
      s.worker.postMessage(job.req)
    }
    this.scheduleIdle()
  }

  /** Ends the threads once nothing has run for RENDER_IDLE_MS. */
  private scheduleIdle() {
    if (this.idle) clearTimeout(this.idle)
    this.idle = setTimeout(() => {
      this.idle = null
      if (this.queue.length || this.slots.some((s) => s.job)) return this.scheduleIdle()
      for (const s of this.slots) s.worker.terminate()
      this.slots = []
    }, RENDER_IDLE_MS)
    this.idle.unref?.()
  }

  close() {
    if (this.idle) clearTimeout(this.idle)
    this.idle = null
    const closed = new Error('render pool closed')
    for (const job of this.queue.splice(0)) job.reject(closed)
    for (const s of this.slots) {
      s.job?.reject(closed)
      this.finish(s)
      s.worker.terminate()
    }
    this.slots = []
  }
}

/** CPU time (user + system) a thread of this process has used, in ms; null where /proc cannot tell. */
function threadCpuMs(tid: number | null): number | null {
  if (tid === null) return null
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100
  } catch {
    return null
  }
}

let pool: RenderPool | null = null

/** The process's render threads (started on first use). `timeoutMs`: for tests. */
export function renderPool(timeoutMs = RENDER_TIMEOUT_MS): RenderPool {
  if (!pool) {
    pool = new RenderPool(RENDER_THREADS, timeoutMs)
    onRenderThreadsStarted(closeRenderPool)
  }
  return pool
}

/** Ends the render threads (shutdown; tests). The next heavy render starts them again. */
export function closeRenderPool(): void {
  pool?.close()
  pool = null
}

/**
 * Renders one message within its budgets (sandbox.ts): inline when it is light, else in a render thread
 * with a deadline. Throws RenderLimitError (its `part` set) past a budget, TemplateSyntaxError for a
 * source that does not compile.
 */
export async function renderMessage(src: MessageSource, vars: TemplateVars): Promise<RenderedEmail> {
  if (!isHeavy(src)) return renderEmail(src, vars)
  return renderPool().render(src, vars)
}

/**
 * validateTemplateSource (index.ts) for the services: a heavy body is compiled in a render thread
 * (compiling a large source costs milliseconds). Throws the 422 of validateTemplateSource, or a
 * RenderLimitError (`time`) when compiling outlives the deadline.
 */
export async function checkTemplateSource(input: SourceCheck): Promise<void> {
  if (!isHeavy(input)) return validateTemplateSource(input)
  return renderPool().validate(input).catch((err: unknown) => { throw renderRefusal(err) })
}
