/**
 * Another node, for test/jobs/wakeups.test.ts: opens the store of argv[2], publishes wake-ups through the
 * Redis of argv[3] as `mailctl serve` does (src/main.ts), queues one job of kind argv[4] inside a
 * transaction and exits.
 */
import Redis from 'ioredis'
import { openStore } from '../../src/db/client'
import { enqueue } from '../../src/jobs/queue'
import { publishWakeups } from '../../src/jobs/lease'
import { createLogger } from '../../src/log'

const [url, redisUrl, name] = process.argv.slice(2)
const store = openStore(url)
const redis = new Redis(redisUrl)
await redis.ping()
publishWakeups(store, redis, createLogger('silent'))
await store.tx((db) => enqueue(store, name, {}, { now: new Date() }, db))
// The publish is sent once the microtask that enqueue queued has run.
await Bun.sleep(50)
await redis.quit()
await store.close()
