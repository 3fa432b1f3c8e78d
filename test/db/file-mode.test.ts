import { expect, test } from 'bun:test'
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'

/** Issue 35, item 14: the SQLite database files are readable by their owner only (0600), like the key files. */

const mode = (f: string) => statSync(f).mode & 0o777

test('a new database, its WAL and shared-memory files are created 0600 whatever the umask', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-mode-'))
  const old = process.umask(0o022)
  try {
    const file = join(dir, 'data', 'mailctl.db')
    const store = openStore(`sqlite://${file}`, { sqliteSynchronous: 'NORMAL' })
    await migrate(store)
    for (const f of [file, `${file}-wal`, `${file}-shm`]) expect({ f, mode: mode(f).toString(8) }).toEqual({ f, mode: '600' })
    await store.close()
  } finally {
    process.umask(old)
    rmSync(dir, { recursive: true, force: true })
  }
})

test('an existing database readable by others is narrowed to 0600 when opened', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-mode-'))
  try {
    const file = join(dir, 'mailctl.db')
    writeFileSync(file, '')
    chmodSync(file, 0o644)
    const store = openStore(`sqlite://${file}`, { sqliteSynchronous: 'NORMAL' })
    await migrate(store)
    expect(mode(file).toString(8)).toBe('600')
    expect(mode(`${file}-wal`).toString(8)).toBe('600')
    await store.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
