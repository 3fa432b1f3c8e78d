/**
 * Another node, for test/jobs/wakeups.test.ts: opens the store of argv[2], queues one job of kind argv[4]
 * inside a transaction with its wake-up published through the Redis of argv[3], as a service call of
 * `mailctl serve` does (`wake: deps`), and exits.
 */
import Redis from 'ioredis'
import { openStore } from '../../src/db/client'
import { enqueue } from '../../src/jobs/queue'
import { createLogger } from '../../src/log'

const [url, redisUrl, name] = process.argv.slice(2)
const store = openStore(url)
const redis = new Redis(redisUrl)
await redis.ping()
await store.tx((db) => enqueue(store, name, {}, { wake: { redis, log: createLogger('silent') }, now: new Date() }, db))
// The publish is sent once the microtask that enqueue queued has run.
await Bun.sleep(50)
await redis.quit()
await store.close()
