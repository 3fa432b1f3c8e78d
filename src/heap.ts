/**
 * Keeps each thread's JavaScript heap near what the program holds, whatever the machine's RAM.
 *
 * JavaScriptCore sizes its heap from the machine's memory: the more RAM, the more garbage it lets pile up
 * between collections. On a 24 GB machine a campaign's garbage (rendered messages, SMTP buffers, claimed
 * batches) took `serve` to about 360 MB of RSS within its first 10,000 messages. Told it had 1 or 2 GB
 * (`BUN_JSC_forceRAMSize`, what a small VPS has) the same run stayed near 245 MB at the same speed. An
 * environment variable is read before any code runs, so the executable cannot set it for itself.
 *
 * The keeper runs in the main thread and in each signer thread (every heap is its own). Every CHECK_MS,
 * when the heap has grown by more than MAILCTL_HEAP_GROWTH_MB (default 4) since the last collection, it
 * collects: a young-generation (eden) collection, or a full one once the heap has grown by FULL_AFTER times
 * the threshold since the last full collection. An idle process does not grow, so the keeper never
 * collects it. 0 turns it off: more throughput on a machine with memory to spare.
 *
 * Eden collections first: a full collection marks the whole heap, about 26 ms on the main thread's 26 MB
 * (36 ms on a slower machine), 7 ms on a signer thread's 4 MB, measured during a campaign. With only full
 * ones, collecting took a fifth of the main thread's CPU on that slower machine. An eden collection
 * frees what died young for much less; what it leaves (messages waiting for their SMTP session outlive
 * one) waits for the next full one. Three alternated pairs at 100,000 recipients: 1,099, 1,073 and 1,049
 * messages/s instead of 1,038, 931 and 907; server CPU 1.63-1.70 ms per message instead of 1.71-1.97; the
 * main thread's collections 3.9 s in all instead of about 10 (81-89 full ones of 30-36 ms per 30,000
 * messages); 10-18 MB more peak RSS (221-223 MB).
 *
 * Measured with a 30,000-recipient campaign (bench/campaign.ts): peak RSS 348-361 MB without the keeper;
 * with it, 289 MB at 24 MB/300 ms, 263 MB at 8 MB/300 ms, 251 MB at 8 MB/100 ms, 227 MB at 4 MB/100 ms.
 * At 100,000 recipients, runs back to back: 367 MB and 1,063 messages/s without the keeper, 224 MB and
 * 924 messages/s with it at 4 MB (the collections cost 0.23 ms of CPU per message, 13 % of the rate).
 *
 * Each look at the heap's size (`heapSize()`) walks its blocks: about 1.2 ms on a 105 MB heap, 0.1 ms on
 * 26 MB. So the size a collection leaves is taken from the collection's own answer, not read again, and a
 * heap that grew by less than a quarter threshold since the last look is looked at half as often, down to
 * once every IDLE_FACTOR intervals (800 ms); more growth brings it back to every CHECK_MS. An idle
 * node's main thread went from 19 to 16 ms of CPU a second, and a 30,000-recipient campaign's peak RSS
 * stayed where it was (228-230 MB against 226-229). Not kept: the heap's capacity (`heapTotal` of
 * `process.memoryUsage()`, read without a walk) as the measure: the same campaign peaked at 286-295 MB,
 * since garbage that fits in blocks already held does not move it (docs/benchmarks.md).
 *
 * The collection is JSC's alone (`fullGC`). `Bun.gc(true)` also has mimalloc clean up its own heaps: on the
 * main thread's heap its collections took 33-36 ms instead of 25-26, and three alternated pairs of
 * 30,000-recipient runs went 1.7-2.6 % faster without it, for 3-8 MB more peak RSS (docs/adr/0011-heap-keeper.md, docs/benchmarks.md).
 */
import { edenGC, fullGC, heapSize } from 'bun:jsc'

const CHECK_MS = 100
/** A full collection once the heap has grown by this many thresholds since the last full one. */
const FULL_AFTER = 4
/** At most this many check intervals between two looks at a heap that does not grow. */
const IDLE_FACTOR = 8

export interface HeapKeeper {
  /** Collections the keeper ran, eden and full. */
  readonly collections: number
  /** Of those, the full ones. */
  readonly fullCollections: number
  /** Looks at the heap's size so far. */
  readonly checks: number
  stop(): void
}

/** Starts a keeper on this thread's heap; `growthBytes` 0 starts none (MAILCTL_HEAP_GROWTH_MB=0). */
export function keepHeapSmall(opts: { checkMs?: number; growthBytes: number }): HeapKeeper {
  const growth = opts.growthBytes
  if (growth <= 0) return { collections: 0, fullCollections: 0, checks: 0, stop() {} }
  const checkMs = opts.checkMs ?? CHECK_MS
  let base = heapSize()
  let fullBase = base
  /** The size at the last look (after its collection, if it collected). */
  let last = base
  let collections = 0
  let fullCollections = 0
  let checks = 0
  let waitMs = checkMs
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const look = () => {
    checks++
    const now = heapSize()
    // A collection of JSC's own lowers the marks too.
    if (now < base) base = now
    if (now < fullBase) fullBase = now
    const sinceLast = now - last
    last = now
    if (now - base > growth) {
      // The collections answer the size they leave (JSC's figure: up to 6 % below heapSize()'s, so the next
      // collection comes a little early at worst): no second walk of the heap.
      if (now - fullBase <= FULL_AFTER * growth) base = edenGC()
      else {
        base = fullGC()
        fullBase = base
        fullCollections++
      }
      last = base
      collections++
    }
    // A heap that grew by less than a quarter threshold since the last look (an idle node) is looked at
    // half as often, down to once every IDLE_FACTOR intervals; more growth brings it back to every checkMs.
    waitMs = sinceLast < growth / 4 ? Math.min(waitMs * 2, checkMs * IDLE_FACTOR) : checkMs
  }
  const check = () => {
    try {
      look()
    } finally {
      if (!stopped) {
        timer = setTimeout(check, waitMs)
        timer.unref()
      }
    }
  }
  timer = setTimeout(check, waitMs)
  timer.unref()
  return {
    get collections() { return collections },
    get fullCollections() { return fullCollections },
    get checks() { return checks },
    stop: () => { stopped = true; clearTimeout(timer) },
  }
}
