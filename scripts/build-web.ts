/**
 * Writes the dashboard's bundle for the executable (issue 37, item 7): dist/web/ holds every chunk raw,
 * gzip- and brotli-compressed (compressed here, once, not by the running server), and manifest.ts, which
 * imports each file `with { type: 'file' }` so that `bun build --compile` embeds them
 * (src/http/dashboard.ts reads it when running as the executable). `npm run build` runs it first.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { buildWeb, type WebFile } from '../src/http/web-build'

const out = resolve(import.meta.dir, '..', 'dist', 'web')
rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })

const bundle = await buildWeb()
const lines: string[] = []
let n = 0
function write(name: string, file: WebFile): { raw: string; gzip: string; br: string } {
  const id = `f${n++}`
  writeFileSync(join(out, name), file.raw)
  writeFileSync(join(out, `${name}.gz`), file.gzip)
  writeFileSync(join(out, `${name}.br`), file.br)
  lines.push(`import ${id} from './${name}' with { type: 'file' }`)
  lines.push(`import ${id}g from './${name}.gz' with { type: 'file' }`)
  lines.push(`import ${id}b from './${name}.br' with { type: 'file' }`)
  return { raw: id, gzip: `${id}g`, br: `${id}b` }
}
const ref = (r: { raw: string; gzip: string; br: string }) => `raw: ${r.raw}, gzip: ${r.gzip}, br: ${r.br}`
const shell = write('index.html', bundle.shell)
const files = [...bundle.files].map(([name, f]) => `  { name: ${JSON.stringify(name)}, type: ${JSON.stringify(f.type)}, ${ref(write(name, f))} },`)
writeFileSync(join(out, 'manifest.ts'), `${lines.join('\n')}\n\nexport const manifest = {\n shell: { ${ref(shell)} },\n files: [\n${files.join('\n')}\n ],\n}\n`)
console.log(`dist/web: ${bundle.files.size} files and the page, raw, gzip and brotli`)
