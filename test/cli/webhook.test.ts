import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { run, SOURCE } from './run'

/** `mailctl webhook list|add|remove PROJECT ...` on a fresh SQLite data dir. */

setDefaultTimeout(60_000)
const data = mkdtempSync(join(tmpdir(), 'mailctl-cli-webhook-'))
afterAll(() => rmSync(data, { recursive: true, force: true }))
const mailctl = (args: string[]) => run(SOURCE, args, { MAILCTL_DATA_DIR: data })

test('add prints the secret once; list shows the endpoint without it; remove deletes it', async () => {
  expect((await mailctl(['migrate'])).code).toBe(0)
  expect((await mailctl(['project', 'create', '--name', 'hooks', '--json'])).code).toBe(0)
  const added = await mailctl(['webhook', 'add', 'hooks', 'https://hooks.example.com/in', '--events', 'email.*, contact.unsubscribed', '--description', 'CRM', '--json'])
  expect(added.code).toBe(0)
  const e = JSON.parse(added.stdout)
  expect(e).toMatchObject({ url: 'https://hooks.example.com/in', eventTypes: ['email.*', 'contact.unsubscribed'], description: 'CRM', enabled: true, secret: expect.stringMatching(/^whsec_/) })
  const human = await mailctl(['webhook', 'add', 'hooks', 'https://two.example.com/'])
  expect(human.code).toBe(0)
  expect(human.stdout).toContain('signing secret (shown only now): whsec_')
  const list = await mailctl(['webhook', 'list', 'hooks', '--json'])
  expect(list.code).toBe(0)
  const rows = JSON.parse(list.stdout)
  expect(rows.map((r: { url: string }) => r.url)).toEqual(['https://hooks.example.com/in', 'https://two.example.com/'])
  expect(list.stdout).not.toContain('whsec_')
  const removed = await mailctl(['webhook', 'remove', 'hooks', e.id, '--json'])
  expect(removed.code).toBe(0)
  expect(JSON.parse(removed.stdout)).toEqual({ id: e.id, removed: true })
  expect(JSON.parse((await mailctl(['webhook', 'list', 'hooks', '--json'])).stdout)).toHaveLength(1)
})

test('errors: a refused URL, an unknown endpoint or project exit 1 with one line; a missing argument exits 2', async () => {
  expect((await mailctl(['migrate'])).code).toBe(0)
  await mailctl(['project', 'create', '--name', 'errs'])
  const bad = await mailctl(['webhook', 'add', 'errs', 'http://169.254.169.254/'])
  expect(bad.code).toBe(1)
  expect(bad.stderr).toContain('cloud metadata address')
  expect((await mailctl(['webhook', 'remove', 'errs', 'nope'])).code).toBe(1)
  expect((await mailctl(['webhook', 'list', 'no-such-project'])).code).toBe(1)
  expect((await mailctl(['webhook', 'add', 'errs'])).code).toBe(2)
})
