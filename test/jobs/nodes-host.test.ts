import { expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { hostname } from 'node:os'
import { forEachStore } from '../helpers/env'
import { HEARTBEAT_MS, NodeRegistry } from '../../src/jobs/nodes'

/**
 * A node of this host whose process is gone is dead once it missed a heartbeat, not only once its
 * heartbeat is stale (issue 40: a server restarted after a crash on PostgreSQL resumes its previous
 * process's mail at once). A node of another host, or one whose process lives, waits for staleness.
 */

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const p = Bun.spawn(['true'])
  await p.exited
  return p.pid
}

forEachStore('nodes of this host', (env) => {
  test('a gone process of this host is dead after a missed heartbeat; a live one, another host or a fresh beat is not', async () => {
    const me = new NodeRegistry(env.store)
    const { nodes } = env.store.t
    const now = Date.now()
    const missed = new Date(now - HEARTBEAT_MS - 2000)
    const live = Bun.spawn(['sleep', '30'])
    try {
      const rows = [
        { id: 'ngone', hostname: hostname(), pid: await deadPid(), startedAt: missed, heartbeatAt: missed },
        { id: 'nfresh', hostname: hostname(), pid: await deadPid(), startedAt: missed, heartbeatAt: new Date(now) },
        { id: 'nlive', hostname: hostname(), pid: live.pid, startedAt: missed, heartbeatAt: missed },
        { id: 'nother', hostname: `other-${hostname()}`, pid: await deadPid(), startedAt: missed, heartbeatAt: missed },
      ]
      await env.store.tx((db) => db.insert(nodes).values(rows))
      expect(await me.dead(['ngone:a', 'nfresh:b', 'nlive:c', 'nother:d'])).toEqual(['ngone:a'])
    } finally {
      live.kill()
    }
  })

  test('a beat holds the node\'s lock file beside a SQLite file (none on PostgreSQL), and a stop removes it', async () => {
    const me = new NodeRegistry(env.store)
    // A process's lock on SQLite tells others it lives; PostgreSQL nodes have only their heartbeat rows.
    const path = env.store.file === null ? null : `${env.store.file}-node-${me.id}.lock`
    await me.beat()
    expect(path !== null && existsSync(path)).toBe(env.kind === 'sqlite')
    await me.stop()
    expect(path !== null && existsSync(path)).toBe(false)
  })
})
