import { describe, expect, test } from 'bun:test'
import { parseAddress } from '../../../src/modules/verify/syntax'
import { editDistance, suggestDomain } from '../../../src/modules/verify/typo'

describe('syntax', () => {
  test('accepted forms', () => {
    for (const a of ['a@b.co', 'first.last@example.org', "o'brien+tag@x.io", 'x!#$%&*/=?^_`{|}~-@sub.domain.example', 'jörg@bücher.example', '用户@例子.广告', 'a@xn--bcher-kva.example', '1@2.ab']) {
      const r = parseAddress(a)
      expect(r.ok).toBe(true)
    }
    const idn = parseAddress('jörg@Bücher.example')
    expect(idn.ok && idn.asciiDomain).toBe('xn--bcher-kva.example')
  })

  test('refused forms, each with a reason', () => {
    const cases: Array<[string, string]> = [
      ['', 'empty'],
      ['plain', 'no @'],
      ['@x.com', 'before the @ is empty'],
      ['a@', 'after the @ is empty'],
      ['a b@x.com', 'spaces'],
      ['a@b@x.com', 'extra @'],
      ['.a@x.com', 'dot'],
      ['a.@x.com', 'dot'],
      ['a(comment)@x.com', 'not allowed'],
      ['a@x..com', 'empty label'],
      ['a@x.com.', 'empty label'],
      ['a@localhost', 'no top-level domain'],
      ['a@x.123', 'numeric'],
      ['a@under_score.com', 'host name'],
      [`a@${'l'.repeat(64)}.com`, 'host name'],
      [`a@${'abcdefghi.'.repeat(26)}com`, 'longer than'],
      ['a@xn--zz.com', 'punycode'],
    ]
    for (const [addr, reason] of cases) {
      const r = parseAddress(addr)
      expect(r.ok).toBe(false)
      if (!r.ok) expect(r.reason).toContain(reason)
    }
  })
})

describe('typo detection', () => {
  test('edit distance counts a transposition as one edit', () => {
    expect(editDistance('gmail', 'gmial')).toBe(1)
    expect(editDistance('hotmail', 'hotmal')).toBe(1)
    expect(editDistance('yahoo', 'yaho')).toBe(1)
    expect(editDistance('abc', 'xyz', 1)).toBe(2)
  })

  test('common misspellings are corrected', () => {
    const cases: Record<string, string> = {
      'gmial.com': 'gmail.com', 'gmai.com': 'gmail.com', 'gnail.com': 'gmail.com', 'gmaill.com': 'gmail.com',
      'gmail.con': 'gmail.com', 'gmail.cmo': 'gmail.com', 'gmail.co': 'gmail.com', 'gmail.cm': 'gmail.com',
      'gmial.con': 'gmail.com', 'hotmial.com': 'hotmail.com', 'hotmal.com': 'hotmail.com', 'hotmail.co': 'hotmail.com',
      'yaho.com': 'yahoo.com', 'yahooo.com': 'yahoo.com', 'yahoo.co.ku': 'yahoo.co.uk', 'outlok.com': 'outlook.com',
      'outloo.com': 'outlook.com', 'iclod.com': 'icloud.com', 'icloud.cm': 'icloud.com', 'aol.con': 'aol.com',
      'hotmail.co.k': 'hotmail.co.uk', 'comcast.ner': 'comcast.net', 'gmailcom': 'gmail.com',
    }
    for (const [typo, fix] of Object.entries(cases)) expect(`${typo} -> ${suggestDomain(typo)}`).toBe(`${typo} -> ${fix}`)
  })

  test('real domains are left alone', () => {
    for (const d of ['gmail.com', 'mail.com', 'email.com', 'ymail.com', 'gmx.de', 'gmx.net', 'web.de', 'me.com', 'mac.com', 'yahoo.fr',
      'hotmail.de', 'bol.com', 'aol.de', 'att.com', 'comcast.com', 'verizon.com', 'orange.com', 'example.com', 'acme.test',
      'company.co.uk', 'mygmail-shop.com', 'gmail.org', 'live.de', 'qq.cn']) {
      expect(`${d} -> ${suggestDomain(d)}`).toBe(`${d} -> null`)
    }
  })
})
