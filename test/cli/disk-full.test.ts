import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { run, SOURCE } from './run'

/**
 * A full disk at start (issue 40, item 7), on a real full volume: a small private tmpfs (mounted for this
 * test only, so it needs root and `mount`; skipped otherwise), filled with a file of zeros. `serve` must
 * name the full disk instead of SQLite's "disk I/O error", and `doctor` reports the free space against the
 * ~100 MB the write-ahead log needs.
 */

setDefaultTimeout(60_000)

const dir = mkdtempSync('/tmp/mailctl-full-')
const mounted = process.getuid?.() === 0 && Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', dir]).exitCode === 0
afterAll(() => {
  if (mounted) Bun.spawnSync(['umount', dir])
  rmSync(dir, { recursive: true, force: true })
})

const data = join(dir, 'data')
const env = { MAILCTL_DATA_DIR: data, MAILCTL_HTTP_PORT: '0', MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_HOSTNAME: 'localhost' }
const diskCheck = async () => {
  const res = await run(SOURCE, ['doctor', '--json'], env)
  return (JSON.parse(res.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }).checks.find((c) => c.name === 'disk space')
}

;(mounted ? describe : describe.skip)('a full disk [sqlite, tmpfs]', () => {
  beforeAll(async () => {
    mkdirSync(data)
    const migrated = await run(SOURCE, ['migrate'], env)
    expect(migrated.code).toBe(0)
  })

  test('doctor warns below the write-ahead log\'s headroom; on a full disk serve says "disk full" and doctor fails', async () => {
    const low = await diskCheck()
    expect(low?.status).toBe('warn')
    expect(low?.detail).toContain('100 MB')
    // Fill the volume.
    Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(dir, 'fill')}`, 'bs=64k'])
    const res = await run(SOURCE, ['serve'], env)
    expect(res.code).not.toBe(0)
    expect(res.stderr).toContain('disk full')
    expect(res.stderr).toContain('100 MB')
    const full = await diskCheck()
    expect(full?.status).toBe('fail')
    expect(full?.detail).toContain('disk is full')
    rmSync(join(dir, 'fill'))
    expect((await diskCheck())?.status).toBe('warn')
  })
})
