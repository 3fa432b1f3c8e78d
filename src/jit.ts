/**
 * Which of JavaScriptCore's optimising tiers `serve` runs with (MAILCTL_JIT; why: docs/adr/0012-jit-dfg-tier.md,
 * figures: docs/benchmarks.md).
 *
 * JSC compiles hot functions in tiers: the baseline JIT, the DFG, then the FTL (the most optimised, and
 * the costliest to compile). In a campaign, the FTL compiled a few hundred functions (3.3 s of compile time
 * in a 30,000-recipient run, on the runtime's JIT threads, while both cores were busy delivering) and kept
 * recompiling some of them. With the DFG as the highest tier the server used less CPU per message in the
 * same runs, so `serve` runs that way by default (`dfg`); `ftl` keeps the runtime's default.
 *
 * A JSC option is read once, when the runtime starts, from the environment (BUN_JSC_useFTLJIT); nothing
 * sets it afterwards, and the executable cannot set it for itself before it starts. So `serve` replaces
 * its own process, before it opens anything, with the same program started with the same arguments and
 * that option in its environment (execve: the same process id, so supervisors, `kill` and the tests see
 * no difference). Where that cannot be done (not Linux, no /proc, no libc to call) it goes on as it is.
 */
import { readFileSync } from 'node:fs'

export type JitTiers = 'dfg' | 'ftl'

/** The runtime's option; when the environment already sets it (either way), it is left as it is. */
export const FTL_OPTION = 'BUN_JSC_useFTLJIT'

/** What `serve` should start with: the option to add to the environment, or null when there is nothing to do. */
export function jitEnvironment(tiers: JitTiers, env: Record<string, string | undefined>): Record<string, string> | null {
  if (tiers === 'ftl' || env[FTL_OPTION] !== undefined) return null
  return { [FTL_OPTION]: '0' }
}

/** This process's arguments as the kernel started it (the executable's own first), from /proc. */
export function startedArgv(cmdline: Buffer): string[] {
  const parts = cmdline.toString('utf8').split('\0')
  if (parts.at(-1) === '') parts.pop()
  return parts
}

/**
 * execve(2) of this same program with `argv` and `env`, through libc. Returns only when it did not
 * happen, with the reason (the process then goes on as it is).
 */
async function execve(path: string, argv: string[], env: Record<string, string>): Promise<string> {
  let ffi: typeof import('bun:ffi')
  let libc: { symbols: { execve: (path: unknown, argv: unknown, envp: unknown) => number } }
  try {
    ffi = await import('bun:ffi')
    libc = ffi.dlopen('libc.so.6', { execve: { args: [ffi.FFIType.ptr, ffi.FFIType.ptr, ffi.FFIType.ptr], returns: ffi.FFIType.i32 } }) as typeof libc
  } catch (err) {
    return `libc could not be loaded: ${err instanceof Error ? err.message : String(err)}`
  }
  const { ptr } = ffi
  // Every string NUL-terminated in its own buffer; each list a NULL-terminated array of their addresses.
  // The buffers stay referenced here until execve has replaced the process (or failed).
  const cString = (s: string) => Buffer.from(`${s}\0`, 'utf8')
  const list = (items: string[]) => {
    const bufs = items.map(cString)
    const ptrs = new BigUint64Array(bufs.length + 1)
    bufs.forEach((b, i) => { ptrs[i] = BigInt(ptr(b)) })
    return { bufs, ptrs }
  }
  const file = cString(path)
  const args = list(argv)
  const envp = list(Object.entries(env).map(([k, v]) => `${k}=${v}`))
  const rc = libc.symbols.execve(ptr(file), ptr(args.ptrs), ptr(envp.ptrs))
  return `execve failed (${rc}); ${args.bufs.length} arguments, ${envp.bufs.length} variables`
}

/**
 * Restarts this process in place with the JIT tiers asked for, when that needs the runtime's option and
 * the environment does not have it. Returns only when it does not restart: null when there was nothing to
 * do, else why it could not (the caller says so and goes on).
 */
export async function restartWithJitTiers(tiers: JitTiers): Promise<string | null> {
  const add = jitEnvironment(tiers, process.env)
  if (!add) return null
  if (process.platform !== 'linux') return `not on Linux (${process.platform})`
  let argv: string[]
  try {
    argv = startedArgv(readFileSync('/proc/self/cmdline'))
  } catch (err) {
    return `/proc/self/cmdline could not be read: ${err instanceof Error ? err.message : String(err)}`
  }
  if (!argv.length) return '/proc/self/cmdline is empty'
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v
  return execve(process.execPath, argv, { ...env, ...add })
}
