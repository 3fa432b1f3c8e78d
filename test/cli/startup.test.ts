import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { BUN, cleanEnv, ROOT, run, SOURCE } from './run'

/**
 * What the CLI loads (issue 18, speed of starting): building the program, which is all `--help` and
 * `--version` need, imports commander and the CLI's own light modules only; a command imports its
 * libraries when it runs, and no command but `serve` loads the HTTP app or the mail libraries. Checked in
 * a fresh process through the module registry (which modules, not how long: benches time, tests do not).
 */

setDefaultTimeout(60_000)

const data = mkdtempSync(join(tmpdir(), 'mailctl-startup-'))
afterAll(() => rmSync(data, { recursive: true, force: true }))

/** The modules loaded after `body` ran in a fresh `bun -e` process: packages, and files of this repository. */
async function loadedAfter(body: string): Promise<{ packages: string[]; files: string[] }> {
  const script = `const { buildProgram } = await import(${JSON.stringify(join(ROOT, 'cli', 'mailctl.ts'))})\n${body}\nprocess.stdout.write(JSON.stringify(Object.keys(require.cache)))`
  const p = Bun.spawn([BUN, '-e', script], { cwd: data, env: cleanEnv({ MAILCTL_DATA_DIR: data }), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  if (code !== 0) throw new Error(`bun -e exited ${code}: ${err}`)
  const keys = JSON.parse(out.slice(out.lastIndexOf('["'))) as string[]
  const packages = new Set<string>()
  for (const k of keys) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(k)
    if (m) packages.add(m[1])
  }
  return {
    packages: [...packages].sort(),
    files: keys.filter((k) => k.startsWith(ROOT) && !k.includes('node_modules')).map((k) => relative(ROOT, k)).sort(),
  }
}

/** Libraries of the transports (Elysia itself is loaded by the modules' TypeBox models, `t`). */
const SERVER_LIBRARIES = ['@elysiajs/openapi', 'nodemailer', 'smtp-server', 'mailparser', 'handlebars', 'ioredis', 'papaparse', 'mailchecker']

test('building the program (--help, --version) loads commander and no other library', async () => {
  const { packages, files } = await loadedAfter('buildProgram()')
  expect(packages).toEqual(['commander'])
  // The CLI's own files, and the light modules they name: settings (with the allow-lists' parser), errors,
  // the suppression reasons.
  expect(files.filter((f) => f.startsWith('src/'))).toEqual(['src/config.ts', 'src/deps.ts', 'src/errors.ts', 'src/modules/suppressions/reasons.ts', 'src/net/address-guard.ts'])
})

test('project list loads the store, not the HTTP app or the mail libraries', async () => {
  expect((await run(SOURCE, ['migrate'], { MAILCTL_DATA_DIR: data }, data)).code).toBe(0)
  const { packages, files } = await loadedAfter(
    `const out = []; const write = process.stdout.write.bind(process.stdout); process.stdout.write = (s) => { out.push(String(s)); return true }
     await buildProgram().parseAsync(['bun', 'mailctl', 'project', 'list', '--json'])
     process.stdout.write = write
     if (JSON.stringify(JSON.parse(out.join(''))) !== '[]') throw new Error('unexpected output: ' + out.join(''))`,
  )
  expect(packages).toContain('drizzle-orm')
  expect(packages.filter((p) => SERVER_LIBRARIES.includes(p))).toEqual([])
  expect(files.filter((f) => f.startsWith('src/http/') && f !== 'src/http/formats.ts' && f !== 'src/http/ratelimit.ts')).toEqual([])
})
