import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TestEnv } from '../helpers/env'

/*
 * GET /openapi.json passes Spectral's `spectral:oas` ruleset (.spectral.yaml) with no error and no warning,
 * run as the linter's own CLI (a dev dependency) on the document the app serves. The document does not
 * depend on the store, so one store (SQLite) serves it.
 */
const ROOT = join(import.meta.dir, '..', '..')
const SPECTRAL = join(ROOT, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js')
const env = new TestEnv('sqlite')
const dir = mkdtempSync(join(tmpdir(), 'mailctl-openapi-'))
beforeAll(() => env.start(), 60_000)
afterAll(async () => {
  await env.stop()
  rmSync(dir, { recursive: true, force: true })
}, 60_000)

interface Finding { code: string; message: string; severity: number; path: string[] }

test('spectral:oas finds no error and no warning in /openapi.json', async () => {
  const res = await env.request('GET', '/openapi.json')
  expect(res.status).toBe(200)
  const file = join(dir, 'openapi.json')
  writeFileSync(file, res.text)
  // Node runs the linter, as its package is built for (bun is this test's runtime, not the linter's).
  const p = Bun.spawn(['node', SPECTRAL, 'lint', file, '--ruleset', join(ROOT, '.spectral.yaml'), '--format', 'json', '--quiet'], { stdout: 'pipe', stderr: 'pipe' })
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  let findings: Finding[]
  try {
    findings = JSON.parse(out) as Finding[]
  } catch {
    throw new Error(`spectral printed no JSON: ${out.slice(0, 500)} ${err.slice(0, 500)}`)
  }
  // Errors (0) and warnings (1); the ruleset's hints and information would be 2 and 3.
  const bad = findings.filter((f) => f.severity <= 1).map((f) => `${f.code}: ${f.message} at ${f.path.join('.')}`)
  expect(bad).toEqual([])
}, 120_000)

test('a document the ruleset refuses is reported (the check can fail)', async () => {
  const file = join(dir, 'bad.json')
  writeFileSync(file, JSON.stringify({ openapi: '3.1.0', info: { title: 'x', version: '1' }, paths: { '/a': { get: { responses: { 200: { description: 'ok' } } } } } }))
  const p = Bun.spawn(['node', SPECTRAL, 'lint', file, '--ruleset', join(ROOT, '.spectral.yaml'), '--format', 'json', '--quiet'], { stdout: 'pipe', stderr: 'pipe' })
  const [out] = await Promise.all([new Response(p.stdout).text(), p.exited])
  const codes = (JSON.parse(out) as Finding[]).map((f) => f.code)
  expect(codes).toEqual(expect.arrayContaining(['info-contact', 'oas3-api-servers', 'operation-operationId', 'operation-description', 'operation-tags']))
}, 120_000)
