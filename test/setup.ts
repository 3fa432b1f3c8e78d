/**
 * Preloaded before every test file (bunfig.toml): the default per-test deadline. bunfig's own
 * `[test] timeout` is not applied by this Bun (1.4.5), and this call was seen not to hold for every file of
 * a run of several files (tests timed out at Bun's 5 s default on a loaded machine), so `npm test` also
 * passes `--timeout 60000`. A deadline for a hung test, not a time any test asserts.
 */
import { setDefaultTimeout } from 'bun:test'

setDefaultTimeout(30_000)
