import { expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { SignerPool } from '../../src/mail/signer'
import type { OutboundMessage } from '../../src/mail/mime'

/** The signer pool: messages built and signed in worker threads, in batches, errors per message. */
test('worker threads build verifiable messages; a bad key fails only its message; close rejects the queue', async () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const key = { domain: 'example.com', selector: 's1', privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string }
  const record = `v=DKIM1; k=rsa; p=${(publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64')}`
  const msg = (i: number): OutboundMessage => ({
    messageId: `<m${i}@example.com>`, date: Date.UTC(2026, 0, 1), from: { address: 'a@example.com' }, to: { address: `r${i}@dest.test` },
    subject: `Message ${i}`, html: `<p>Body ${i}</p>`, text: `Body ${i}`,
  })
  const pool = new SignerPool(2, 4)
  try {
    const built = await Promise.all(Array.from({ length: 25 }, (_, i) => pool.build(msg(i), key)))
    for (const [i, raw] of built.entries()) {
      expect(raw.toString('latin1')).toContain(`Message-ID: <m${i}@example.com>`)
      const res = await dkimVerify(raw, { resolver: async () => [[record]] })
      expect(res.results[0].status.result).toBe('pass')
    }
    const mixed = await Promise.allSettled([pool.build(msg(100), { ...key, privateKeyPem: 'not a key' }), pool.build(msg(101), key)])
    expect(mixed[0].status).toBe('rejected')
    expect(String((mixed[0] as PromiseRejectedResult).reason)).toContain('message build failed')
    expect(mixed[1].status).toBe('fulfilled')
    const queued = Array.from({ length: 40 }, (_, i) => pool.build(msg(200 + i), key))
    await pool.close()
    const outcomes = await Promise.allSettled(queued)
    expect(outcomes.some((o) => o.status === 'rejected' && String(o.reason).includes('signer pool closed'))).toBe(true)
  } finally {
    await pool.close()
  }
})
