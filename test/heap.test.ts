import { expect, test } from 'bun:test'
import { keepHeapSmall } from '../src/heap'

/** Holds `mb` megabytes of small objects until dropped (garbage once `keep` is cleared). */
function allocate(mb: number, keep: unknown[]) {
  for (let i = 0; i < mb * 1024; i++) keep.push(Array.from({ length: 16 }, (_, k) => ({ k, s: `x${i}-${k}` })))
}

test('the heap keeper collects once the heap has grown past its threshold, and never while it does not grow', async () => {
  Bun.gc(true)
  const keeper = keepHeapSmall({ checkMs: 10, growthBytes: 4 * 1024 * 1024 })
  try {
    // Nothing allocated: a few checks, no collection.
    await Bun.sleep(60)
    expect(keeper.collections).toBe(0)
    // Well past the threshold (garbage, once dropped): the next check collects.
    let keep: unknown[] = []
    allocate(16, keep)
    keep = []
    for (let i = 0; i < 200 && keeper.collections === 0; i++) await Bun.sleep(10)
    expect(keeper.collections).toBeGreaterThan(0)
    expect(keep.length).toBe(0)
  } finally {
    keeper.stop()
  }
  // 0 starts no keeper (MAILCTL_HEAP_GROWTH_MB=0).
  expect(keepHeapSmall({ growthBytes: 0 }).collections).toBe(0)
  // Stopped: growth no longer collects.
  const after = keeper.collections
  const keep: unknown[] = []
  allocate(16, keep)
  await Bun.sleep(60)
  expect(keeper.collections).toBe(after)
})
