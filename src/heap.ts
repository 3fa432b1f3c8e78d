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
 * runs a full one: about 26 ms on the main thread's heap of 26 MB, 7 ms on a signer thread's 4 MB (measured
 * during a campaign, the other threads competing for the cores). An idle process does not grow, so the
 * keeper never collects it. 0 turns it off: more throughput on a machine with memory to spare.
 *
 * Measured with a 30,000-recipient campaign (bench/campaign.ts): peak RSS 348-361 MB without the keeper;
 * with it, 289 MB at 24 MB/300 ms, 263 MB at 8 MB/300 ms, 251 MB at 8 MB/100 ms, 227 MB at 4 MB/100 ms.
 * At 100,000 recipients, runs back to back: 367 MB and 1,063 messages/s without the keeper, 224 MB and
 * 924 messages/s with it at 4 MB (the collections cost 0.23 ms of CPU per message, 13 % of the rate).
 *
 * The collection is JSC's alone (`fullGC`). `Bun.gc(true)` also has mimalloc clean up its own heaps: on the
 * main thread's heap its collections took 33-36 ms instead of 25-26, and three alternated pairs of
 * 30,000-recipient runs went 1.7-2.6 % faster without it, for 3-8 MB more peak RSS (docs/decisions.md).
 */
import { fullGC, heapSize } from 'bun:jsc'

const CHECK_MS = 100

export interface HeapKeeper {
  /** Full collections the keeper ran. */
  readonly collections: number
  stop(): void
}

/** Starts a keeper on this thread's heap; `growthBytes` 0 starts none (MAILCTL_HEAP_GROWTH_MB=0). */
export function keepHeapSmall(opts: { checkMs?: number; growthBytes: number }): HeapKeeper {
  const growth = opts.growthBytes
  if (growth <= 0) return { collections: 0, stop() {} }
  let base = heapSize()
  let collections = 0
  const timer = setInterval(() => {
    const now = heapSize()
    // A collection of JSC's own lowers the mark too.
    if (now < base) base = now
    if (now - base <= growth) return
    fullGC()
    collections++
    base = heapSize()
  }, opts.checkMs ?? CHECK_MS)
  timer.unref()
  return {
    get collections() { return collections },
    stop: () => clearInterval(timer),
  }
}
