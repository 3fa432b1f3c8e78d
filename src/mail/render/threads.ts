/**
 * The light handle the composition root stops the render threads through (closeDeps): importing the
 * render pool itself would load the template engine into every CLI command (test/cli/startup.test.ts).
 * The pool registers its closer here when it starts its threads.
 */
let closer: (() => void) | null = null

/** Called by the render pool when it starts (pool.ts). */
export function onRenderThreadsStarted(close: () => void): void {
  closer = close
}

/** Ends the render threads if any were started; the next heavy render starts them again. */
export function closeRenderThreads(): void {
  const close = closer
  closer = null
  close?.()
}
