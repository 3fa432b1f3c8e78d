import { describe, expect, test } from 'bun:test'
import { htmlToText } from '../../../src/mail/render/html-to-text'
import { COMPILE_OPTIONS, parse, toRenderFn, type TemplateVars } from '../../../src/mail/render/sandbox'
import { deriveTextTemplate, renderDerivedText } from '../../../src/mail/render/text'

const derive = (source: string) => deriveTextTemplate(source, parse(source))

/** The derived text of `source` with `vars`, and what converting the rendered HTML gives. */
function both(source: string, vars: TemplateVars) {
  const derived = derive(source)
  if (!derived) throw new Error(`no text template for ${source}`)
  return { derived: renderDerivedText(derived, vars), converted: htmlToText(toRenderFn(parse(source), COMPILE_OPTIONS)(vars)) }
}

describe('deriveTextTemplate', () => {
  test('a template of text and plain values: breaks folded once, no render-time work left', () => {
    const d = derive('<h1>Hi {{name}}</h1><p>Your order {{order.id}}</p>')
    expect(d).not.toBeNull()
    expect(d?.foldBreaks).toBe(false)
    expect(d?.links).toBe(false)
    expect(d?.render({ name: 'Ann', order: { id: 7 } })).toBe('Hi Ann\n\nYour order 7')
  })

  test('blocks leave break sentinels for render time; a link to a variable URL leaves link marks', () => {
    expect(derive('<p>A</p>{{#if x}}<p>B</p>{{/if}}')?.foldBreaks).toBe(true)
    expect(derive('<a href="{{url}}">Prefs</a>')?.links).toBe(true)
    expect(derive('<a href="https://x.test/">Prefs</a>')?.links).toBe(false)
  })

  test('null for what it cannot carry faithfully: raw values, ~, <pre>, mark characters, block-dependent labels', () => {
    for (const source of [
      '<p>{{{html}}}</p>',
      '<p>{{~name}}</p>',
      '<pre>{{name}}</pre>',
      '<p>\uE0000\uE001 {{name}}</p>',
      '<p>&#123;&#123;x}}</p>',
      '<a href="https://x.test/">{{#if a}}yes{{/if}}</a>',
    ]) {
      expect({ source, derived: derive(source) }).toEqual({ source, derived: null })
    }
  })
})

describe('renderDerivedText', () => {
  test('a variable link target: " [url]" when set (mailto: stripped), nothing when empty, # or javascript:', () => {
    const source = '<p><a href="{{url}}">Prefs</a></p>'
    const cases: Array<[string, string]> = [
      ['https://x.test/p?a=1', 'Prefs [https://x.test/p?a=1]'],
      ['mailto:a@b.test', 'Prefs [a@b.test]'],
      ['', 'Prefs'],
      ['#top', 'Prefs'],
      ['javascript:alert(1)', 'Prefs'],
    ]
    for (const [url, text] of cases) {
      expect({ url, ...both(source, { url }) }).toEqual({ url, derived: text, converted: text })
    }
  })

  test('breaks around blocks settle like the direct conversion for empty, one and many iterations', () => {
    const source = '<p>A</p>{{#each items}}<p>{{this}}</p>{{/each}}<div>Z</div>'
    const cases: Array<[string[], string]> = [
      [[], 'A\n\nZ'],
      [['x'], 'A\n\nx\n\nZ'],
      [['x', 'y'], 'A\n\nx\n\ny\n\nZ'],
    ]
    for (const [items, text] of cases) {
      expect({ items, ...both(source, { items }) }).toEqual({ items, derived: text, converted: text })
    }
  })

  test('a <br> in a block adds a line to the break before it; empty values leave no doubled spaces', () => {
    const br = '<div>X</div>{{#if t}}<br>{{/if}}Y'
    expect(both(br, { t: true })).toEqual({ derived: 'X\n\nY', converted: 'X\n\nY' })
    expect(both(br, { t: false })).toEqual({ derived: 'X\nY', converted: 'X\nY' })
    const source = '<p>{{a}} {{b}} end</p><div>{{c}}</div><p>{{d}}</p><p>last</p>'
    expect(both(source, { a: '', b: 'B', c: 'C', d: '' })).toEqual({ derived: 'B end\n\nC\n\nlast', converted: 'B end\n\nC\n\nlast' })
    expect(both(source, { a: 'A', b: '', c: '', d: 'D' })).toEqual({ derived: 'A end\n\nD\n\nlast', converted: 'A end\n\nD\n\nlast' })
  })
})

describe('the text alternative on hostile values (linear time; the per-test timeout is the only clock)', () => {
  test('a value of 60,000 spaces between blocks: the break sentinels fold as the per-render conversion does', () => {
    const { derived, converted } = both('<p>A</p>{{#if x}}<p>B</p>{{/if}}{{v}}{{#if x}}<p>C</p>{{/if}}', { x: true, v: `${' '.repeat(60_000)}z` })
    expect(derived).toBe(converted)
    expect(derived).toBe('A\n\nB\n\nz\n\nC')
  }, 5_000)

  test('ordered lists through the derived template and per render give the same numbers', () => {
    for (const [source, vars] of [
      ['<ol><li>{{a}}</li><li>{{b}}</li></ol>', { a: 'x', b: 'y' }],
      ['<ol>{{#each items}}<li>{{this}}</li>{{/each}}</ol>', { items: ['p', 'q', 'r'] }],
      ['{{#if a}}<ol start="3"><li>{{a}}</li></ol>{{/if}}', { a: 'x' }],
    ] as const) {
      const d = derive(source)
      const converted = htmlToText(toRenderFn(parse(source), COMPILE_OPTIONS)(vars))
      expect(d ? renderDerivedText(d, vars) : converted).toBe(converted)
    }
    expect(htmlToText(toRenderFn(parse('<ol>{{#each items}}<li>{{this}}</li>{{/each}}</ol>'), COMPILE_OPTIONS)({ items: ['p', 'q', 'r'] }))).toBe('1. p\n2. q\n3. r')
  })
})
