import { loadavg } from 'node:os'

/**
 * BENCH_ALTERNATE=N (send.ts, campaign.ts): the bench runs itself N times on SQLite and N times on a fresh
 * PostgreSQL database, alternately (SQLite, PostgreSQL, SQLite...), each run a child process with its own
 * server, and prints every run's figures and then PostgreSQL's rate against SQLite's: per pair (a run and
 * the one after it) and over all runs. A shared machine's load moves between runs: alternated runs see
 * about the same. Returns false when BENCH_ALTERNATE is not set (the caller runs once, as before).
 */
export async function alternateStores(script: string, rateKey: string, extraKeys: string[] = []): Promise<boolean> {
  const n = Number(process.env.BENCH_ALTERNATE ?? 0)
  if (!n) return false
  const runs: Array<{ store: 'sqlite' | 'pg'; figures: Record<string, unknown> }> = []
  for (let i = 0; i < 2 * n; i++) {
    const store = i % 2 === 0 ? 'sqlite' : 'pg'
    const env: Record<string, string | undefined> = { ...process.env, BENCH_ALTERNATE: '' }
    if (store === 'pg') env.BENCH_DATABASE_URL = 'pg'
    else delete env.BENCH_DATABASE_URL
    const p = Bun.spawn([process.execPath, script], { env, stdout: 'pipe', stderr: 'inherit' })
    const out = await new Response(p.stdout).text()
    await p.exited
    const json = out.slice(out.indexOf('{'), out.lastIndexOf('}') + 1)
    const figures = JSON.parse(json) as Record<string, unknown>
    runs.push({ store, figures })
    const shown = Object.fromEntries([rateKey, ...extraKeys, 'loadAverage'].map((k) => [k, figures[k] ?? null]))
    console.log(JSON.stringify({ run: i + 1, store, ...shown }))
  }
  const rate = (r: (typeof runs)[number]) => Number(r.figures[rateKey])
  const pairs: number[] = []
  for (let i = 1; i < runs.length; i++) {
    const pg = runs[i].store === 'pg' ? runs[i] : runs[i - 1]
    const lite = runs[i].store === 'sqlite' ? runs[i] : runs[i - 1]
    pairs.push(Math.round((rate(pg) / rate(lite)) * 100) / 100)
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
  const pgMean = mean(runs.filter((r) => r.store === 'pg').map(rate))
  const liteMean = mean(runs.filter((r) => r.store === 'sqlite').map(rate))
  console.log(JSON.stringify({
    [`${rateKey}Sqlite`]: runs.filter((r) => r.store === 'sqlite').map(rate),
    [`${rateKey}Pg`]: runs.filter((r) => r.store === 'pg').map(rate),
    pgToSqliteByNeighbours: pairs,
    pgToSqlite: Math.round((pgMean / liteMean) * 100) / 100,
    loadAverage: loadavg().map((v) => Math.round(v * 100) / 100),
  }))
  return true
}
