/**
 * Time that decides behaviour comes from the one clock, `Deps.clock` (src/clock.ts), so that tests can
 * move it. A direct read of the machine's time (`Date.now()`, `new Date()` without an argument) in src/
 * is allowed only in the files below, each with how many reads it has and why: pure measurement
 * (durations, budgets, timeouts against real timers), in-memory caches, times that other machines check
 * against their own clocks, and records of when something happened outside any project's data. The
 * "not on the clock yet" entries are behaviour whose function has no deps in scope; they are to move,
 * never to grow. A new read elsewhere, or one more in a listed file, fails here: take the time from
 * `deps.clock` (or `ctx.now`), or add the file with its reason (docs/architecture.md, "Time").
 */
import { expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

const ALLOWED: Record<string, [reads: number, why: string]> = {
  'src/clock.ts': [2, 'the system clock itself'],
  'src/log.ts': [1, 'log lines carry the machine time'],
  'src/db/pg-guard.ts': [2, 'measures how long PostgreSQL was down (a duration)'],
  'src/db/client.ts': [3, 'the write lock timeout (real time against real waits) and when a migration ran'],
  'src/db/migrate.ts': [1, 'records when a migration ran'],
  'src/dns/resolver.ts': [4, 'in-memory caches of resolvers and answers (TTLs against real time)'],
  'src/secrets.ts': [1, 'records when the key fingerprints were first seen, at start'],
  'src/http/errors.ts': [1, "the error envelope's timestamp: when the answer was made"],
  'src/ops/backup.ts': [1, "the archive's creation time (an offline file, not project data)"],
  'src/ops/tar.ts': [1, "the archive members' modification time"],
  'src/ops/restore.ts': [2, "offline restore: compares with the nodes' heartbeats (written on the machine time) and marks its start"],
  'src/ops/schedule.ts': [1, "doctor: the age of the newest backup file, by the machine's time"],
  'src/mail/dkim.ts': [1, "DKIM t=: receivers check it against their own clocks"],
  'src/mail/mime.ts': [1, "DKIM t=: receivers check it against their own clocks"],
  'src/modules/hooks/dispatcher.ts': [1, 'webhook signature timestamps: receivers check them against their own clocks'],
  'src/mail/outbound/throttle.ts': [4, "adapts to a remote server's real rate, against real timers"],
  'src/mail/outbound/deliver.ts': [8, "claim pauses and per-domain stalls against real timers; in-memory domain cache"],
  'src/mail/outbound/recorder.ts': [2, 'how long a storage failure is retried, against real timers'],
  'src/mail/outbound/direct.ts': [2, 'in-memory MX route cache'],
  'src/mail/outbound/pool.ts': [2, 'in-memory memory of TLS failures per host'],
  'src/mail/outbound/mta-sts.ts': [4, 'in-memory MTA-STS policy cache (max_age against real time)'],
  'src/modules/workflows/engine.ts': [3, "the wake loop's time budget (elapsed real time)"],
  'src/modules/analytics/service.ts': [2, "the roll-up's time budget (elapsed real time)"],
  'src/modules/events/outbox.ts': [2, "drain()'s timeout (real time)"],
  'src/modules/segments/jobs.ts': [3, 'in-memory debounce and cache of membership hints'],
  'src/modules/webhooks/sns.ts': [2, 'in-memory cache of SNS signing certificates'],
  'src/modules/campaigns/render.ts': [2, 'in-memory cache of campaign sources'],
  'src/modules/contacts/search/index.ts': [5, 'in-memory search index: recency and rebuild back-off'],
  'src/modules/contacts/search/pg.ts': [3, 'in-memory search index: recency and prune interval'],
  'src/modules/contacts/search/sqlite.ts': [1, 'in-memory search index: recency'],
  'src/modules/contacts/import.ts': [4, 'progress reports at most every PROGRESS_EVERY_MS (real time); not on the clock yet: the upload row\'s createdAt'],
  'src/modules/contacts/service.ts': [4, 'not on the clock yet: contact write times (the module is being reworked in parallel)'],
  'src/modules/contacts/bulk.ts': [1, 'not on the clock yet: bulk write time (the module is being reworked in parallel)'],
  'src/modules/contacts/fields.ts': [2, 'not on the clock yet: field write times (the module is being reworked in parallel)'],
  'src/modules/projects/service.ts': [2, 'not on the clock yet: createProject and rotateKeys take a store, no deps'],
  'src/mail/tlsrpt/results.ts': [1, 'not on the clock yet: the in-memory TLS result time'],
}

const READ = /\bDate\.now\(\)|\bnew Date\(\)/g

/** Direct reads of the time per file of src/, comment lines left out. */
function reads(): Map<string, number> {
  const found = new Map<string, number>()
  for (const f of readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })) {
    if (!f.endsWith('.ts')) continue
    let n = 0
    for (const line of readFileSync(join(ROOT, 'src', f), 'utf8').split('\n')) {
      const code = line.trimStart()
      if (code.startsWith('*') || code.startsWith('//') || code.startsWith('/*')) continue
      n += code.match(READ)?.length ?? 0
    }
    if (n) found.set(`src/${f}`, n)
  }
  return found
}

test('src/ reads the time from the one clock, except in the listed files, each with its reason', () => {
  const found = reads()
  const unlisted = [...found].filter(([f]) => !(f in ALLOWED)).map(([f, n]) => `${f}: ${n}`)
  expect(unlisted).toEqual([])
  const counts = Object.fromEntries([...found].filter(([f]) => f in ALLOWED))
  const listed = Object.fromEntries(Object.entries(ALLOWED).map(([f, [n]]) => [f, n]))
  // A listed file with fewer reads than listed: lower its count (or drop it); more: justify the new one.
  expect(counts).toEqual(listed)
})

test('the pattern counts a read of the machine time, not a read of the clock nor a Date of a given time', () => {
  expect('const t = Date.now()'.match(READ)?.length).toBe(1)
  expect('at: new Date(), until: new Date(ms)'.match(READ)?.length).toBe(1)
  expect('deps.clock.date()'.match(READ)).toBeNull()
})
