/**
 * Preloaded before every test file (bunfig.toml): the default per-test deadline. bunfig's own
 * `[test] timeout` is not applied by this Bun (1.4.5): tests ran with Bun's 5 s default, and on a loaded
 * machine tests against real stores and servers went past it. This is a deadline for a hung test, not a
 * time any test asserts.
 */
import { setDefaultTimeout } from 'bun:test'

setDefaultTimeout(30_000)
