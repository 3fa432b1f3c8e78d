import { afterAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { inlineBuilder, SignerPool } from '../../src/mail/signer'
import type { DkimKey } from '../../src/mail/dkim'
import { LINK_PATHS, verifyLinkToken, type LinkDeps } from '../../src/mail/links'
import { dataContent } from '../../src/mail/outbound/data-content'
import type { OutboundMessage } from '../../src/mail/mime'
import { ContentError, type CampaignSource } from '../../src/mail/render/campaign'
import { must } from '../helpers/must'

/** The signer pool: messages built and signed in worker threads, in batches, errors per message. */
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
const key: DkimKey = { domain: 'example.com', selector: 's1', privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string }
const record = `v=DKIM1; k=rsa; p=${(publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64')}`
const msg = (i: number): OutboundMessage => ({
  messageId: `<m${i}@example.com>`, date: Date.UTC(2026, 0, 1), from: { address: 'a@example.com' }, to: { address: `r${i}@dest.test` },
  subject: `Message ${i}`, html: `<p>Body ${i}</p>`, text: `Body ${i}`,
})
// mailparser ships no type declarations: the part of its result used here.
const { simpleParser } = require('mailparser') as { simpleParser: (raw: Buffer) => Promise<{ html: string | false; text?: string }> }
const dkimResult = async (raw: Buffer) => (await dkimVerify(raw, { resolver: async () => [[record]] })).results[0]?.status.result

describe('SignerPool', () => {
  const pools: SignerPool[] = []
  const pool = (size: number, batch: number, links: LinkDeps | null = null) => { const p = new SignerPool(size, batch, 0, links); pools.push(p); return p }
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

  test('a busy thread is posted its next batch once a whole one waits, two at most; what it holds is size x batch x 2', async () => {
    const p = pool(1, 4)
    expect(p.holds).toBe(8)
    expect(pool(2, 32).holds).toBe(128)
    expect(inlineBuilder(null).holds).toBe(0)
    // The idle thread starts with the first message alone; the next four make a whole batch, posted while
    // it builds; the rest wait in the pool (a thread cannot answer before this loop gives way).
    const built = Array.from({ length: 12 }, (_, i) => p.build(msg(500 + i), key))
    expect(p.posted).toEqual([2])
    const raws = await Promise.all(built)
    for (const [i, raw] of raws.entries()) {
      expect(raw.toString('latin1')).toContain(`Message-ID: <m${500 + i}@example.com>`)
      expect(await dkimResult(raw)).toBe('pass')
    }
    expect(p.posted).toEqual([0])
  })

  test('a message comes with its DATA content made in the thread: the same bytes as made from a copy, sharing the message\'s buffer', async () => {
    const p = pool(2, 4)
    // The second one has a line starting with a dot, which DATA doubles: it comes as the message alone.
    const messages = [msg(40), { ...msg(41), text: 'Body 41\n.hidden line\n.' }]
    for (const m of messages) {
      const raw = await p.build(m, key)
      expect(await dkimResult(raw)).toBe('pass')
      const data = dataContent(raw)
      // A copy of the message is not known as built: its DATA content is made again, from its bytes.
      const fresh = dataContent(Buffer.from(raw))
      expect(data.toString('latin1')).toBe(fresh.toString('latin1'))
      expect(data.toString('latin1').endsWith('\r\n.\r\n')).toBe(true)
      const shared = data.buffer === raw.buffer && data.byteOffset === raw.byteOffset
      expect(shared).toBe(m === messages[0])
    }
    expect(dataContent(await p.build(messages[1], key)).toString('latin1')).toContain('\r\n..hidden line\r\n')
  })

  test('a bad key fails only its own message, with the reason; the pool keeps working', async () => {
    const p = pool(1, 8)
    const bad = { ...key, privateKeyPem: 'not a key' }
    const mixed = await Promise.allSettled([p.build(msg(100), key), p.build(msg(101), bad), p.build(msg(102), key)])
    expect(mixed.map((m) => m.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    const reason = String((mixed[1] as PromiseRejectedResult).reason)
    expect(reason).toStartWith('Error: message build failed: ')
    // The same key fails the same way on the calling thread.
    await expect(inlineBuilder(null).build(msg(101), bad)).rejects.toThrow()
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

  test('a campaign message is rendered in the thread that builds it: its contact\'s data, its own unsubscribe footer, links tracked for its email', async () => {
    const links: LinkDeps = { secret: 'signer-test-secret', config: { publicUrl: 'https://mail.example.com' } }
    const campaign: CampaignSource = {
      id: 'c1', projectId: '01000000-0000-7000-8000-000000000001', type: 'MARKETING', subject: 'Hi {{firstName}}',
      body: '<html><body><p>Hello {{firstName}}</p><a href="https://shop.example.com/a?x=1&amp;y=2">Shop</a> <a href="mailto:help@example.com">Help</a></body></html>',
    }
    const contactId = (i: number) => `01000000-0000-7000-8000-00000000010${i}`
    const emailId = (i: number) => `01000000-0000-7000-8000-00000000020${i}`
    const campaignMsg = (i: number, tracking: boolean): OutboundMessage => ({
      ...msg(500 + i), html: null, text: null,
      campaign: { emailId: emailId(i), campaign, contact: { id: contactId(i), email: `r${i}@dest.test`, data: { firstName: `Ann${i}` } }, tracking },
    })
    const p = pool(2, 2, links)
    const built = await Promise.all(Array.from({ length: 5 }, (_, i) => p.build(campaignMsg(i, i !== 4), key)))
    for (const [i, raw] of built.entries()) {
      expect(await dkimResult(raw)).toBe('pass')
      const parsed = await simpleParser(raw)
      const html = String(parsed.html)
      expect(html).toContain(`<p>Hello Ann${i}</p>`)
      expect(parsed.text).toContain(`Hello Ann${i}`)
      // The footer's unsubscribe link is this contact's, for this email.
      const unsub = [...html.matchAll(new RegExp(`${links.config.publicUrl}${LINK_PATHS.unsubscribe}/([A-Za-z0-9_-]+)`, 'g'))].map((m) => verifyLinkToken(links, m[1], 'contact'))
      expect(unsub).toEqual([{ kind: 'contact', projectId: campaign.projectId, contactId: contactId(i), emailId: emailId(i) }])
      const clicks = [...html.matchAll(new RegExp(`${links.config.publicUrl}${LINK_PATHS.click}/([A-Za-z0-9_-]+)`, 'g'))].map((m) => verifyLinkToken(links, m[1], 'click'))
      const opens = [...html.matchAll(new RegExp(`${links.config.publicUrl}${LINK_PATHS.open}/([A-Za-z0-9_-]+)`, 'g'))].map((m) => verifyLinkToken(links, m[1], 'open'))
      if (i === 4) {
        // The project does not track: links as written, no pixel.
        expect({ clicks, opens }).toEqual({ clicks: [], opens: [] })
        expect(html).toContain('href="https://shop.example.com/a?x=1&amp;y=2"')
      } else {
        expect(clicks).toEqual([{ kind: 'click', emailId: emailId(i), url: 'https://shop.example.com/a?x=1&y=2' }])
        expect(opens).toEqual([{ kind: 'open', emailId: emailId(i) }])
      }
      expect(html).toContain('href="mailto:help@example.com"')
    }
    // Built on the calling thread, the same message has the same content.
    const inline = await simpleParser(await inlineBuilder(links).build(campaignMsg(0, true), key))
    const threaded = await simpleParser(built[0])
    expect({ html: inline.html, text: inline.text }).toEqual({ html: threaded.html, text: threaded.text })
  })

  test('a campaign message that cannot be rendered fails alone, with a ContentError giving the reason', async () => {
    const base = msg(600)
    const bad: OutboundMessage = {
      ...base, html: null, text: null,
      campaign: { emailId: 'e1', campaign: { id: 'c', projectId: 'p', type: 'MARKETING', subject: 's', body: '<p>{{#each}}</p>' }, contact: { id: 'k', email: 'k@dest.test', data: {} }, tracking: false },
    }
    const p = pool(1, 4, { secret: 's', config: { publicUrl: 'https://mail.example.com' } })
    const [ok, failed] = await Promise.allSettled([p.build(msg(601), key), p.build(bad, key)])
    expect(ok.status).toBe('fulfilled')
    const reason = (failed as PromiseRejectedResult).reason
    expect(reason).toBeInstanceOf(ContentError)
    expect(String(reason.message)).toStartWith('The campaign could not be rendered: ')
    // A pool without link keys cannot sign a campaign message's links: refused the same way.
    const content = must(bad.campaign, 'the campaign content')
    await expect(pool(1, 4).build({ ...bad, campaign: { ...content, campaign: { ...content.campaign, body: '<p>ok</p>' } } }, key)).rejects.toBeInstanceOf(ContentError)
  })
})
