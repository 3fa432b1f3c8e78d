import { afterAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { inlineBuilder, SignerPool } from '../../src/mail/signer'
import type { DkimKey } from '../../src/mail/dkim'
import type { OutboundMessage } from '../../src/mail/mime'

/** The signer pool: messages built and signed in worker threads, in batches, errors per message. */
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
const key: DkimKey = { domain: 'example.com', selector: 's1', privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string }
const record = `v=DKIM1; k=rsa; p=${(publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64')}`
const msg = (i: number): OutboundMessage => ({
  messageId: `<m${i}@example.com>`, date: Date.UTC(2026, 0, 1), from: { address: 'a@example.com' }, to: { address: `r${i}@dest.test` },
  subject: `Message ${i}`, html: `<p>Body ${i}</p>`, text: `Body ${i}`,
})
const dkimResult = async (raw: Buffer) => (await dkimVerify(raw, { resolver: async () => [[record]] })).results[0]?.status.result

describe('SignerPool', () => {
  const pools: SignerPool[] = []
  const pool = (size: number, batch: number) => { const p = new SignerPool(size, batch); pools.push(p); return p }
  afterAll(async () => { for (const p of pools) await p.close() })

  test('worker threads build verifiable messages, each answered with its own; without a key, unsigned', async () => {
    const p = pool(2, 4)
    const built = await Promise.all(Array.from({ length: 25 }, (_, i) => p.build(msg(i), key)))
    for (const [i, raw] of built.entries()) {
      expect(raw.toString('latin1')).toContain(`Message-ID: <m${i}@example.com>`)
      expect(await dkimResult(raw)).toBe('pass')
    }
    // Without a key the message is built unsigned.
    const unsigned = await p.build(msg(30), null)
    expect(unsigned.toString('latin1')).toContain('Subject: Message 30')
    expect(unsigned.toString('latin1')).not.toContain('DKIM-Signature')
    expect(await dkimResult(unsigned)).toBe('none')
  })

  test('a bad key fails only its own message, with the reason; the pool keeps working', async () => {
    const p = pool(1, 8)
    const bad = { ...key, privateKeyPem: 'not a key' }
    const mixed = await Promise.allSettled([p.build(msg(100), key), p.build(msg(101), bad), p.build(msg(102), key)])
    expect(mixed.map((m) => m.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    const reason = String((mixed[1] as PromiseRejectedResult).reason)
    expect(reason).toStartWith('Error: message build failed: ')
    // The same key fails the same way on the calling thread.
    await expect(inlineBuilder.build(msg(101), bad)).rejects.toThrow()
    expect(await dkimResult(await p.build(msg(103), key))).toBe('pass')
  })

  test('close rejects what is queued or in a worker with "signer pool closed"; later builds run inline; close twice is fine', async () => {
    const p = pool(1, 2)
    const queued = Array.from({ length: 40 }, (_, i) => p.build(msg(200 + i), key))
    await p.close()
    const outcomes = await Promise.allSettled(queued)
    const rejected = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected')
    expect(rejected.length).toBeGreaterThan(0)
    for (const r of rejected) expect(String(r.reason)).toBe('Error: signer pool closed')
    for (const o of outcomes) if (o.status === 'fulfilled') expect(await dkimResult(o.value)).toBe('pass')
    const after = await p.build(msg(300), key)
    expect(await dkimResult(after)).toBe('pass')
    await p.close()
  })

  test('a pool of size 0 builds on the calling thread, with the same errors', async () => {
    const p = pool(0, 8)
    const raw = await p.build(msg(400), key)
    expect(raw.toString('latin1')).toContain('Message-ID: <m400@example.com>')
    expect(await dkimResult(raw)).toBe('pass')
    await expect(p.build(msg(401), { ...key, privateKeyPem: 'not a key' })).rejects.toThrow()
  })
})
