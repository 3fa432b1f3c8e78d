/** `npm run bench`: runs every benchmark script in bench/ (files starting with "_" are helpers). */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const scripts = readdirSync(import.meta.dir).filter((f) => f.endsWith('.ts') && !f.startsWith('_') && f !== 'run.ts').sort()
let failed = 0
for (const f of scripts) {
  console.log(`\n== bench/${f}`)
  const p = Bun.spawn([process.execPath, join(import.meta.dir, f)], { stdout: 'inherit', stderr: 'inherit' })
  if ((await p.exited) !== 0) failed++
}
process.exit(failed ? 1 : 0)
