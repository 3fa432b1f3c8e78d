/**
 * A worker process for test/jobs/lease.test.ts: opens the store of argv[2], joins its node on the job
 * table, claims the due jobs of kind argv[3], prints "claimed <n>" and then waits to be killed.
 */
import { openStore } from '../../src/db/client'
import { claim, jobLeases } from '../../src/jobs/queue'
import { NodeRegistry } from '../../src/jobs/nodes'

const [url, name] = process.argv.slice(2)
const store = openStore(url)
const node = new NodeRegistry(store)
await node.join(jobLeases(store))
const rows = await claim(store, [name], node.newId(), 10, 300_000, new Date())
console.log(`claimed ${rows.length}`)
setInterval(() => {}, 60_000)
