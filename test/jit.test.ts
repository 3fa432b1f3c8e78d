import { expect, test } from 'bun:test'
import { loadConfig } from '../src/config'
import { FTL_OPTION, jitEnvironment, startedArgv } from '../src/jit'

/** src/jit.ts: which runtime option `serve` restarts itself with (the restart itself: test/cli/serve.test.ts). */

test('dfg (the default) adds the option that stops at the DFG tier; ftl adds nothing', () => {
  expect(loadConfig({ env: {} }).jit).toBe('dfg')
  expect(jitEnvironment('dfg', {})).toEqual({ [FTL_OPTION]: '0' })
  expect(jitEnvironment('ftl', {})).toBeNull()
})

test('an option the environment already sets is left as it is, either way (no restart, no loop)', () => {
  expect(jitEnvironment('dfg', { [FTL_OPTION]: '0' })).toBeNull()
  expect(jitEnvironment('dfg', { [FTL_OPTION]: '1' })).toBeNull()
  expect(jitEnvironment('dfg', { [FTL_OPTION]: '' })).toBeNull()
})

test('MAILCTL_JIT takes dfg or ftl, in any case; anything else is refused naming the setting', () => {
  expect(loadConfig({ env: { MAILCTL_JIT: 'FTL' } }).jit).toBe('ftl')
  expect(loadConfig({ env: { MAILCTL_JIT: 'dfg' } }).jit).toBe('dfg')
  expect(() => loadConfig({ env: { MAILCTL_JIT: 'fast' } })).toThrow('MAILCTL_JIT must be dfg or ftl')
})

test('the arguments come back from /proc/self/cmdline as given, empty and non-ASCII ones included', () => {
  const argv = ['/usr/local/bin/mailctl', 'serve', '--role', 'api', '', 'é x']
  expect(startedArgv(Buffer.from(`${argv.join('\0')}\0`))).toEqual(argv)
  expect(startedArgv(Buffer.from(''))).toEqual([])
})
