import { describe, expect, test } from 'bun:test'
import {
  clickUrl, isTrackableUrl, listUnsubscribeHeaders, manageUrl, openPixelUrl, signLinkToken, subscribeUrl, unsubscribeUrl, verifyLinkToken,
  LINK_PATHS, type LinkDeps,
} from '../../src/mail/links'

const deps: LinkDeps = { secret: 'link-test-secret', config: { publicUrl: 'https://mail.example.test' } }
const other: LinkDeps = { secret: 'another-secret', config: deps.config }
const projectId = Bun.randomUUIDv7()
const contactId = Bun.randomUUIDv7()
const emailId = Bun.randomUUIDv7()

function tokenOf(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1)
}

/** Flips one bit in the decoded bytes of a token and re-encodes it. */
function flip(token: string, byte: number, bit = 1): string {
  const raw = Buffer.from(token, 'base64url')
  raw[byte] ^= bit
  return raw.toString('base64url')
}

describe('links', () => {
  test('tokens are stable across versions: links in mail already sent keep working (known answers)', () => {
    const fixed = { secret: 'fixed-secret' }
    const id = '01a21439-176e-7505-b6f7-6261a3634659'
    const click = 'AwABohQ5F251Bbb3YmGjY0ZZGmh0dHBzOi8vZXhhbXBsZS5jb20vYT9iPWM8OWLzZlVulMqPI2o'
    const open = 'AgABohQ5F251Bbb3YmGjY0ZZCtI6HPAKrVhXaglm'
    expect(signLinkToken(fixed, { kind: 'click', emailId: id, url: 'https://example.com/a?b=c' })).toBe(click)
    expect(signLinkToken(fixed, { kind: 'open', emailId: id })).toBe(open)
    expect(verifyLinkToken(fixed, click, 'click')).toEqual({ kind: 'click', emailId: id, url: 'https://example.com/a?b=c' })
    expect(verifyLinkToken({ secret: 'other' }, click)).toBeNull()
  })

  test('contact links round-trip, share one token and live under the public URL', () => {
    const u = unsubscribeUrl(deps, { projectId, contactId, emailId })
    const s = subscribeUrl(deps, { projectId, contactId, emailId })
    const m = manageUrl(deps, { projectId, contactId, emailId })
    expect(u.startsWith(`https://mail.example.test${LINK_PATHS.unsubscribe}/`)).toBe(true)
    expect(s.startsWith(`https://mail.example.test${LINK_PATHS.subscribe}/`)).toBe(true)
    expect(m.startsWith(`https://mail.example.test${LINK_PATHS.manage}/`)).toBe(true)
    expect(tokenOf(u)).toBe(tokenOf(s))
    expect(verifyLinkToken(deps, tokenOf(u), 'contact')).toEqual({ kind: 'contact', projectId, contactId, emailId })
    const noEmail = tokenOf(unsubscribeUrl(deps, { projectId, contactId }))
    expect(verifyLinkToken(deps, noEmail)).toEqual({ kind: 'contact', projectId, contactId })
    expect(noEmail.length).toBeLessThan(tokenOf(u).length)
  })

  test('tokens are short and URL-safe', () => {
    const t = tokenOf(unsubscribeUrl(deps, { projectId, contactId, emailId }))
    expect(t).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(t.length).toBeLessThanOrEqual(90)
    expect(tokenOf(openPixelUrl(deps, emailId)).length).toBeLessThanOrEqual(40)
  })

  test('open and click tokens round-trip; the click target is inside the token', () => {
    expect(verifyLinkToken(deps, tokenOf(openPixelUrl(deps, emailId)), 'open')).toEqual({ kind: 'open', emailId })
    const target = 'https://example.org/path?q=1&r=ü#frag'
    const c = clickUrl(deps, emailId, target)
    expect(c.startsWith(`https://mail.example.test${LINK_PATHS.click}/`)).toBe(true)
    expect(verifyLinkToken(deps, tokenOf(c), 'click')).toEqual({ kind: 'click', emailId, url: target })
  })

  test('a token of one kind is refused where another kind is expected', () => {
    expect(verifyLinkToken(deps, tokenOf(openPixelUrl(deps, emailId)), 'contact')).toBeNull()
    expect(verifyLinkToken(deps, tokenOf(unsubscribeUrl(deps, { projectId, contactId })), 'click')).toBeNull()
  })

  test('every single-bit alteration of a click token is refused (no open redirect)', () => {
    const t = tokenOf(clickUrl(deps, emailId, 'https://example.org/a'))
    const n = Buffer.from(t, 'base64url').length
    for (let i = 0; i < n; i++) {
      for (const bit of [1, 0x80]) expect(verifyLinkToken(deps, flip(t, i, bit))).toBeNull()
    }
  })

  test('a token re-signed under another secret, truncated, extended or garbage is refused and nothing throws', () => {
    const t = tokenOf(unsubscribeUrl(deps, { projectId, contactId }))
    expect(verifyLinkToken(other, t)).toBeNull()
    expect(verifyLinkToken(deps, t.slice(0, -1))).toBeNull()
    expect(verifyLinkToken(deps, `${t}A`)).toBeNull()
    for (const junk of ['', 'x', 'abc', '....', 'a'.repeat(10000), '%00%00', '../../etc', 'AAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
      expect(verifyLinkToken(deps, junk)).toBeNull()
    }
    // a forged token with the right shape but a guessed MAC
    const forged = Buffer.concat([Buffer.from(t, 'base64url').subarray(0, -12), Buffer.alloc(12)]).toString('base64url')
    expect(verifyLinkToken(deps, forged)).toBeNull()
  })

  test('ids that are not UUIDs are carried as strings', () => {
    const t = signLinkToken(deps, { kind: 'contact', projectId: 'proj_1', contactId: 'c-ÄB' })
    expect(verifyLinkToken(deps, t)).toEqual({ kind: 'contact', projectId: 'proj_1', contactId: 'c-ÄB' })
    const long = `https://example.org/${'x'.repeat(3000)}`
    expect(verifyLinkToken(deps, tokenOf(clickUrl(deps, 'e1', long)))).toEqual({ kind: 'click', emailId: 'e1', url: long })
  })

  test('clickUrl accepts absolute http(s) targets only', () => {
    expect(isTrackableUrl('https://a.example/x')).toBe(true)
    expect(isTrackableUrl('http://a.example')).toBe(true)
    for (const bad of ['javascript:alert(1)', 'mailto:a@b.c', '/relative', '#top', 'tel:123', 'data:text/html,x']) {
      expect(isTrackableUrl(bad)).toBe(false)
      expect(() => clickUrl(deps, emailId, bad)).toThrow()
    }
  })

  test('List-Unsubscribe headers carry the one-click URL', () => {
    const h = listUnsubscribeHeaders(deps, { projectId, contactId, emailId })
    expect(h['List-Unsubscribe']).toBe(`<${unsubscribeUrl(deps, { projectId, contactId, emailId })}>`)
    expect(h['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click')
  })
})
