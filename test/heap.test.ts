import { expect, test } from 'bun:test'
import { keepHeapSmall } from '../src/heap'

/** Adds about `mb` megabytes of small objects to `keep`. */
function allocate(mb: number, keep: unknown[]) {
  for (let i = 0; i < mb * 1024; i++) keep.push(Array.from({ length: 16 }, (_, k) => ({ k, s: `x${i}-${k}` })))
}

test('the heap keeper collects once the heap has grown past its threshold, and never while it does not grow', async () => {
  Bun.gc(true)
  const keeper = keepHeapSmall({ checkMs: 10, growthBytes: 4 * 1024 * 1024 })
  // Held while the keeper looks: the growth is live data, which no collection (the runtime's own
  // included) can take away before the keeper sees it.
  let keep: unknown[] = []
  try {
    // Nothing allocated: a few checks, no collection.
    await Bun.sleep(60)
    expect(keeper.collections).toBe(0)
    allocate(16, keep)
    for (let i = 0; i < 300 && keeper.collections === 0; i++) await Bun.sleep(10)
    expect(keeper.collections).toBeGreaterThan(0)
  } finally {
    keeper.stop()
    keep = []
  }
  // 0 starts no keeper (MAILCTL_HEAP_GROWTH_MB=0).
  expect(keepHeapSmall({ growthBytes: 0 }).collections).toBe(0)
  // Stopped: growth no longer collects.
  const after = keeper.collections
  allocate(16, keep)
  await Bun.sleep(60)
  expect(keeper.collections).toBe(after)
  expect(keep.length).toBeGreaterThan(0)
})

test('the keeper collects the young generation first, and the whole heap once it grew by four thresholds since the last full collection', async () => {
  Bun.gc(true)
  const keeper = keepHeapSmall({ checkMs: 10, growthBytes: 1024 * 1024 })
  let keep: unknown[] = []
  /** Allocates `mb` MB of live data, then waits for the keeper's next collection. */
  const grow = async (mb: number) => {
    const before = keeper.collections
    allocate(mb, keep)
    for (let i = 0; i < 300 && keeper.collections === before; i++) await Bun.sleep(10)
    expect(keeper.collections).toBeGreaterThan(before)
  }
  try {
    // 2 MB live: past the threshold, within four of them since the start: eden.
    await grow(2)
    expect(keeper.fullCollections).toBe(0)
    // Live data survives eden collections, so the heap keeps its growth: past four thresholds, a full one.
    for (let i = 0; i < 4 && keeper.fullCollections === 0; i++) await grow(2)
    expect(keeper.fullCollections).toBe(1)
    expect(keeper.collections).toBeGreaterThan(1)
  } finally {
    keeper.stop()
    keep = []
  }
})

test('a heap that does not grow is looked at less and less often', async () => {
  Bun.gc(true)
  const keeper = keepHeapSmall({ checkMs: 10, growthBytes: 64 * 1024 * 1024 })
  try {
    // Every 10 ms this would be about 50 looks; backing off (10, 20, 40, then every 80 ms) about 9.
    await Bun.sleep(500)
    expect(keeper.checks).toBeGreaterThan(0)
    expect(keeper.checks).toBeLessThan(20)
  } finally {
    keeper.stop()
  }
})
