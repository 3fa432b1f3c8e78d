import { describe, expect, test } from 'bun:test'
import Handlebars from 'handlebars'
import { AppError } from '../../src/errors'
import {
  MAX_TEMPLATE_EXPRESSIONS, MAX_TEMPLATE_NESTING, RENDER_CACHE_MAX_ENTRIES, TemplateSyntaxError, clearRenderCache, compileTemplate, escapeHtml, htmlToText,
  renderCacheStats, renderEmail, renderSubject, templateVariables, textStrategy, validateTemplateSource,
} from '../../src/mail/render'

const urls = { unsubscribeUrl: 'https://mail.test/u/abc?x=1&y=2', subscribeUrl: 'https://mail.test/s/abc', manageUrl: 'https://mail.test/m/abc' }

function validationOf(fn: () => unknown): AppError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(AppError)
    return err as AppError
  }
  throw new Error('expected a validation error')
}

describe('escaping', () => {
  test('body values are HTML-escaped; subjects are not; triple-stash is the explicit raw opt-out', () => {
    const vars = templateVariables({ contact: { email: 'a@b.test', data: { name: `<script>alert("x")</script> & 'q' \`b\` =` } } })
    const r = renderEmail({ subject: 'Hi {{name}}', body: '<p>{{name}}</p><div>{{{name}}}</div>' }, vars)
    expect(r.html).toBe('<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;q&#x27; &#x60;b&#x60; &#x3D;</p><div><script>alert("x")</script> & \'q\' `b` =</div>')
    expect(r.subject).toBe(`Hi <script>alert("x")</script> & 'q' \`b\` =`)
    expect(r.text).not.toContain('&lt;')
    expect(r.text).toContain(`<script>alert("x")</script> & 'q'`)
  })

  test('escapeHtml is Handlebars escapeExpression, character for character', () => {
    const values: unknown[] = ['', 'plain', '<>&"\'`=', 'a<b>c&d"e\'f`g=h', '&amp;', 'ünïcödé <ß>', 0, 1, -1.5, NaN, true, false, null, undefined, [1, '<2>'], { a: 1 }, `${'x'.repeat(1000)}<`]
    for (const v of values) expect(escapeHtml(v)).toBe(Handlebars.Utils.escapeExpression(v as string))
  })

  test('the subject is folded onto one line: CR/LF from values become one space', () => {
    const vars = templateVariables({ data: { name: 'Ann\r\nBcc: victim@evil.test\n\nX' } })
    const s = renderSubject('Hello {{name}}!', vars)
    expect(s).toBe('Hello Ann Bcc: victim@evil.test X!')
    expect(s).not.toMatch(/[\r\n]/)
  })
})

describe('variables', () => {
  test('a missing variable renders empty, never as braces, at any depth and in blocks', () => {
    const vars = templateVariables({ contact: { email: 'a@b.test', data: { company: { name: 'Acme' } } } })
    const r = renderEmail({ subject: '[{{nope}}] {{company.nope}}', body: '<p>{{missing}}|{{a.b.c}}|{{company.name.x}}|{{company.nope.deeper}}|{{{raw}}}</p>{{#if nope}}x{{/if}}{{#each nope}}y{{/each}}' }, vars)
    expect(r.html).toBe('<p>||||</p>')
    expect(r.subject).toBe('[] ')
    expect(r.text).toBe('||||')
    for (const s of [r.html, r.subject, r.text]) expect(s).not.toContain('{{')
  })

  test('nested paths: data.company.name is {{company.name}}; arrays by index', () => {
    const vars = templateVariables({ contact: { email: 'a@b.test', data: { company: { name: 'Acme', address: { city: 'Oslo' } }, tags: ['vip', 'beta'] } } })
    const r = renderEmail({ subject: '{{company.name}} in {{company.address.city}}', body: '<p>{{company.name}} / {{company.address.city}} / {{tags.[0]}} / {{tags.[1]}}</p>' }, vars)
    expect(r.subject).toBe('Acme in Oslo')
    expect(r.html).toBe('<p>Acme / Oslo / vip / beta</p>')
  })

  test('request data overlays contact data: persistent:false values render, null removes, "" keeps the stored value', () => {
    const vars = templateVariables({
      contact: { id: 'c1', email: 'ann@b.test', data: { name: 'Ann', plan: 'free', city: 'Oslo', drop: 'me' } },
      data: { plan: { value: 'pro', persistent: false }, code: { value: 'X-42', persistent: false }, city: '', drop: null, kept: { value: 'stored', persistent: true } },
      urls,
    })
    const r = renderEmail({ subject: '{{name}}', body: '{{name}}|{{plan}}|{{code}}|{{city}}|{{drop}}|{{kept}}|{{email}}|{{id}}' }, vars)
    expect(r.html).toBe('Ann|pro|X-42|Oslo||stored|ann@b.test|c1')
  })

  test('reserved keys from data never override the contact email, id or the message URLs', () => {
    const vars = templateVariables({
      contact: { id: 'c1', email: 'ann@b.test', data: { email: 'stored@evil.test', unsubscribeUrl: 'https://evil.test/1' } },
      data: { email: 'req@evil.test', id: 'x', unsubscribeUrl: 'https://evil.test/2', manageUrl: { value: 'https://evil.test/3', persistent: false }, service_id: 's' },
      urls,
    })
    const html = compileTemplate('{{email}} {{id}} {{unsubscribeUrl}} {{subscribeUrl}} {{manageUrl}} [{{service_id}}]', 'text')(vars)
    expect(html).toBe(`ann@b.test c1 ${urls.unsubscribeUrl} ${urls.subscribeUrl} ${urls.manageUrl} []`)
  })

  test('URLs render in attributes (entity-escaped, which browsers decode) and raw in the text part', () => {
    const vars = templateVariables({ contact: { email: 'a@b.test' }, urls })
    const r = renderEmail({ subject: 's', body: '<p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>' }, vars)
    expect(r.html).toBe('<p><a href="https://mail.test/u/abc?x&#x3D;1&amp;y&#x3D;2">Unsubscribe</a></p>')
    expect(r.text).toBe(`Unsubscribe [${urls.unsubscribeUrl}]`)
  })

  test('the control and private-use characters that mark constructs are removed from values', () => {
    const vars = templateVariables({ data: { name: 'A\u0001B\uE004C\uE000D' }, urls: { unsubscribeUrl: 'https://u.test/\u0002x' } })
    const r = renderEmail({ subject: '{{name}}', body: '<p>{{name}}</p><p><a href="{{unsubscribeUrl}}">u</a></p>' }, vars)
    expect(r.html).toBe('<p>ABCD</p><p><a href="https://u.test/x">u</a></p>')
    expect(r.text).toBe('ABCD\n\nu [https://u.test/x]')
  })

  test('scalar types render like Handlebars: numbers, booleans, zero; objects do not throw', () => {
    const vars = templateVariables({ data: { n: 0, f: 1.5, t: true, no: false, obj: { a: 1 }, list: [1, 2] } })
    expect(compileTemplate('{{n}} {{f}} {{t}} {{no}} {{list}}', 'html')(vars)).toBe('0 1.5 true false 1,2')
    expect(compileTemplate('{{obj}}', 'html')(vars)).toBe('[object Object]')
  })
})

describe('security', () => {
  const evil = templateVariables({
    contact: { email: 'a@b.test', data: JSON.parse('{"__proto__": {"polluted": "yes"}, "name": "x", "toString": "boom", "valueOf": 1, "obj": {"toString": "boom", "toHTML": "boom", "ok": "fine"}}') },
  })

  test('prototype properties and methods are unreachable', () => {
    const cases = [
      '{{constructor}}', '{{__proto__}}', '{{name.constructor}}', '{{name.constructor.name}}', '{{name.toString}}',
      '{{lookup this "constructor"}}', '{{#with constructor}}[{{name}}]{{/with}}', '{{#with __proto__}}{{polluted}}{{/with}}',
      '{{polluted}}', '{{__defineGetter__}}', '{{hasOwnProperty}}', '{{#with name}}{{constructor.constructor}}{{/with}}',
    ]
    for (const src of cases) {
      expect(compileTemplate(src, 'html')(evil)).toBe('')
      expect(compileTemplate(src, 'text')(evil)).toBe('')
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  test('own toString / valueOf / toHTML keys in data are dropped, so rendering the object cannot throw', () => {
    expect(compileTemplate('{{obj}}|{{obj.ok}}|{{toString}}', 'html')(evil)).toBe('[object Object]|fine|')
  })

  test('the classic Handlebars code-execution payload does nothing', () => {
    const g = globalThis as Record<string, unknown>
    delete g.__mailctlPwned
    const payload = `{{#with "s" as |string|}}
  {{#with "e"}}
    {{#with split as |conslist|}}
      {{this.pop}}
      {{this.push (lookup string.sub "constructor")}}
      {{this.pop}}
      {{#with string.split as |codelist|}}
        {{this.pop}}
        {{this.push "globalThis.__mailctlPwned = 1; return 'pwned';"}}
        {{this.pop}}
        {{#each conslist}}
          {{#with (string.sub.apply 0 codelist)}}
            {{this}}
          {{/with}}
        {{/each}}
      {{/with}}
    {{/with}}
  {{/with}}
{{/with}}`
    let out = ''
    try {
      out = compileTemplate(payload, 'html')({})
    } catch (err) {
      expect(err).toBeInstanceOf(TemplateSyntaxError)
    }
    expect(out).not.toContain('pwned')
    expect(g.__mailctlPwned).toBeUndefined()
  })

  test('helpers are limited: log, custom helpers, partials and decorators are refused at compile time', () => {
    for (const src of ['{{log "x"}}', '{{foo "bar"}}', '{{#foo bar}}x{{/foo}}', '{{> header}}', '{{#> layout}}x{{/layout}}', '{{* deco}}', '{{#* inline "p"}}x{{/inline}}', '{{#if}}x{{/if}}', '{{#each}}x{{/each}}', '{{lookup a}}', '{{#with a b}}x{{/with}}']) {
      expect(() => compileTemplate(src, 'html')).toThrow(TemplateSyntaxError)
    }
    // The allowed helpers work.
    const vars = templateVariables({ data: { vip: true, off: false, items: ['a', 'b'], user: { n: 'U' }, key: 'n' } })
    expect(compileTemplate('{{#if vip}}V{{else}}R{{/if}}{{#unless off}}U{{/unless}}{{#each items}}[{{@index}}:{{this}}]{{/each}}{{#with user}}{{n}}{{/with}}{{lookup user key}}', 'html')(vars)).toBe('VU[0:a][1:b]UU')
  })
})

describe('compile errors at save time', () => {
  test('a body that does not compile is a 422 VALIDATION_ERROR on field body with the Handlebars message', () => {
    const err = validationOf(() => validateTemplateSource({ subject: 'ok {{name}}', body: '<p>{{#if vip}}unclosed</p>' }))
    expect(err.status).toBe(422)
    expect(err.code).toBe('VALIDATION_ERROR')
    expect(err.opts.errors).toHaveLength(1)
    expect(err.opts.errors?.[0]).toMatchObject({ field: 'body', code: 'invalid_template' })
    expect(err.opts.errors?.[0].message).toContain('Parse error on line 1')
  })

  test('subject and body are both reported; a valid pair passes', () => {
    const err = validationOf(() => validateTemplateSource({ subject: 'Hi {{name}', body: '{{> partial}}' }))
    expect(err.opts.errors?.map((e) => e.field)).toEqual(['subject', 'body'])
    expect(err.opts.errors?.[1].message).toContain('Partials are not supported')
    expect(() => validateTemplateSource({ subject: 'Hi {{name}}', body: '<p>{{#if a}}{{b}}{{/if}}</p>' })).not.toThrow()
    expect(() => validateTemplateSource({ body: '{{unknownHelper 1}}' })).toThrow(/unknown helper unknownHelper/)
  })
})

describe('limits', () => {
  test('block nesting and the number of expressions are bounded before the parser runs', () => {
    const nested = (n: number) => `${'{{#if a}}'.repeat(n)}{{x}}${'{{/if}}'.repeat(n)}`
    expect(() => compileTemplate(nested(MAX_TEMPLATE_NESTING), 'html')).not.toThrow()
    expect(() => compileTemplate(nested(MAX_TEMPLATE_NESTING + 1), 'html')).toThrow(/nested deeper than 32 levels/)
    expect(() => compileTemplate('{{~#each a}}'.repeat(MAX_TEMPLATE_NESTING + 1), 'html')).toThrow(/nested deeper/)
    expect(() => compileTemplate('<i>{{a}}</i>'.repeat(MAX_TEMPLATE_EXPRESSIONS + 1), 'html')).toThrow(/More than 5000/)
    const err = validationOf(() => validateTemplateSource({ body: nested(1000) }))
    expect(err.opts.errors?.[0]).toMatchObject({ field: 'body', code: 'invalid_template' })
  })

  test('a source holding the private-use marker characters is converted per render', () => {
    const body = '<p>\uE0000\uE001 {{name}}</p>'
    expect(textStrategy(body)).toBe('per-render')
    const r = renderEmail({ subject: 's', body }, templateVariables({ data: { name: 'N' } }))
    expect(r.text).toBe('\uE0000\uE001 N')
  })
})

describe('cache', () => {
  test('compiled templates are cached by source hash, per kind, and reused', () => {
    clearRenderCache()
    const src = `<p>cache test {{name}} ${Math.random()}</p>`
    const a = compileTemplate(src, 'html')
    const before = renderCacheStats()
    const b = compileTemplate(String(src.split('').join('')), 'html') // equal text, a different string object
    expect(b).toBe(a)
    expect(renderCacheStats().hits).toBe(before.hits + 1)
    const t = compileTemplate(src, 'text')
    expect(t).not.toBe(a)
    const vars = templateVariables({ data: { name: '<b>' } })
    expect(a(vars)).toContain('&lt;b&gt;')
    expect(t(vars)).toContain('<b>')
    expect(renderCacheStats().size).toBe(2)
  })

  test('the cache is bounded (least recently used first out)', () => {
    clearRenderCache()
    const first = compileTemplate('first {{x}}', 'text')
    for (let i = 0; i < RENDER_CACHE_MAX_ENTRIES; i++) {
      compileTemplate(`filler ${i} {{x}}`, 'text')
      if (i === 10) expect(compileTemplate('kept {{x}}', 'text')).toBe(compileTemplate('kept {{x}}', 'text'))
    }
    expect(renderCacheStats().size).toBe(RENDER_CACHE_MAX_ENTRIES)
    expect(compileTemplate('first {{x}}', 'text')).not.toBe(first)
  })

  test('a failed compile is not cached and fails again', () => {
    expect(() => compileTemplate('{{#if x}}', 'html')).toThrow(TemplateSyntaxError)
    expect(() => compileTemplate('{{#if x}}', 'html')).toThrow(TemplateSyntaxError)
  })
})

describe('the fast path renders exactly what Handlebars renders', () => {
  const hb = Handlebars.create()
  const runtime = { allowProtoPropertiesByDefault: false, allowProtoMethodsByDefault: false }
  const sources = [
    'plain text, no variables',
    '<p>Hello {{name}}!</p>',
    '{{a}}{{b}}{{a}}',
    '{{company.name}} {{company.missing}} {{deep.a.b.c}}',
    '{{{raw}}} and {{raw}}',
    '  {{~name~}}  !',
    'line\n{{! a comment }}\nnext {{!-- long -- comment --}} end',
    '{{this.name}} {{./name}}',
    '{{list.[1]}} {{list.length}} {{name.length}}',
    '{{n}} {{zero}} {{f}} {{t}} {{no}} {{nul}}',
    '\\{{escaped}} {{name}}',
  ]
  const varSets = [
    templateVariables({ contact: { email: 'x@y.test', data: { name: '<Ann & "Bo">', company: { name: 'A=B' }, raw: '<b>r</b>', list: ['p', 'q'], n: 12, zero: 0, f: 0.5, t: true, no: false, nul: null, deep: { a: { b: { c: '`c`' } } } } } }),
    templateVariables({}),
  ]
  for (const kind of ['html', 'text'] as const) {
    test(`${kind}`, () => {
      for (const src of sources) {
        const reference = hb.compile(src, { noEscape: kind === 'text' })
        for (const vars of varSets) expect({ src, out: compileTemplate(src, kind)(vars) }).toEqual({ src, out: reference(vars, runtime) })
      }
    })
  }
})

describe('text alternative', () => {
  const body = `<!DOCTYPE html><html><head><title>T</title><style>p { color: red }</style></head><body>
<div style="display:none">hidden preheader &zwnj;&nbsp;</div>
<h1>Hello {{firstName}}</h1>
<p>Your plan: <b>{{plan}}</b> &amp; more &mdash; ok</p>
{{#if vip}}<p>VIP only</p>{{else}}<p>Regular</p>{{/if}}
<ul>{{#each items}}<li>{{this}}</li>{{/each}}</ul>
<table><tr><td>Total</td><td>{{total}}</td></tr></table>
<p><a href="{{manageUrl}}">Preferences</a> · <a href="https://example.test/">https://example.test/</a></p>
<img src="logo.png" alt="Company logo"><br>Bye<hr>
<p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>
</body></html>`
  const vars = templateVariables({ contact: { email: 'a@b.test', data: { firstName: 'Ann <3', plan: 'Pro & Co', vip: true, items: ['one', 'two'], total: '42 €' } }, urls })

  test('derived once from the template source, and equal to converting the rendered HTML', () => {
    expect(textStrategy(body)).toBe('template')
    const r = renderEmail({ subject: 's', body }, vars)
    expect(r.text).toBe(htmlToText(r.html))
    expect(r.text).toBe([
      'Hello Ann <3',
      '',
      'Your plan: Pro & Co & more — ok',
      '',
      'VIP only',
      '',
      '* one',
      '* two',
      '',
      'Total 42 €',
      '',
      `Preferences [${urls.manageUrl}] · https://example.test/`,
      '',
      'Company logo',
      'Bye',
      '',
      '----',
      '',
      `Unsubscribe [${urls.unsubscribeUrl}]`,
    ].join('\n'))
    expect(r.text).not.toContain('hidden preheader')
    expect(r.text).not.toContain('color: red')
  })

  test('with blocks, the derived text equals the conversion of the rendered HTML for every branch', () => {
    const bodies = [
      '<ul>{{#each items}}<li>{{this}}</li>{{/each}}</ul><p>after</p>',
      '<p>A</p>{{#if x}}<p>B {{name}}</p>{{/if}}<p>C</p>',
      '<div>{{#unless x}}<span>no</span>{{/unless}} tail</div>',
      '<table>{{#each rows}}<tr><td>{{name}}</td><td>{{v}}</td></tr>{{/each}}</table><p>total</p>',
      '<p>Hi {{name}},</p>\n{{!-- a comment --}}\n<p>{{#with company}}{{name}}{{/with}}</p>',
      '{{#if x}}<h1>Title</h1>{{else}}<h2>Other</h2>{{/if}}\n<p>end</p>',
      '<p>Hello {{#if name}}{{name}}{{else}}there{{/if}}!</p>',
      '<div>\n  {{#each items}}\n    <p>{{@index}}: {{this}}</p>\n  {{/each}}\n</div>\n<p>{{name}}</p>',
      '<p>{{#if x}}X{{else if name}}N {{name}}{{else}}none{{/if}}</p><p>{{~#if x~}} tight {{~/if~}}</p>',
      '<table>{{#each rows}}<tr>{{#if @first}}<th>first</th>{{/if}}<td>{{../name}} {{name}}</td></tr>{{/each}}</table>',
    ]
    const dataSets = [
      { x: true, name: 'N', items: ['a', 'b', 'c'], rows: [{ name: 'r1', v: 1 }, { name: 'r2', v: 2 }], company: { name: 'Co' } },
      { x: false, name: '', items: [], rows: [], company: null },
      { x: true, items: ['only'], rows: [{ name: 'r', v: 0 }] },
    ]
    for (const body of bodies) {
      expect({ body, strategy: textStrategy(body) }).toEqual({ body, strategy: body.includes('~') ? 'per-render' : 'template' })
      for (const data of dataSets) {
        const r = renderEmail({ subject: 's', body }, templateVariables({ data }))
        expect({ body, data, text: r.text }).toEqual({ body, data, text: htmlToText(r.html) })
      }
    }
  })

  test('property: for random templates the derived text equals converting the rendered HTML', () => {
    let seed = 20261121
    const rnd = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff }
    const pick = <T,>(a: T[]): T => a[Math.floor(rnd() * a.length)]
    const blocks = ['p', 'div', 'h1', 'h2', 'ul', 'li', 'table', 'tr', 'td', 'th', 'blockquote', 'section']
    const inline = ['b', 'i', 'span', 'strong', 'em', 'a']
    const gen = (depth: number): string => {
      let out = ''
      for (let i = 1 + Math.floor(rnd() * 4); i > 0; i--) {
        const r = rnd()
        if (depth > 3 || r < 0.25) out += pick(['word', 'two words', ' ', '\n', 'x&amp;y', 'z &mdash; w', '', '{{! note }}', '\n{{!-- c --}}\n', '<div style="display:none">hidden {{a}}</div>', '<!-- comment -->'])
        else if (r < 0.45) out += `{{${pick(['a', 'b', 'c', 'obj.x', 'missing'])}}}`
        else if (r < 0.6) { const el = pick(blocks); out += `<${el}>${gen(depth + 1)}</${el}>` }
        else if (r < 0.7) {
          const el = pick(inline)
          out += el === 'a' ? `<a href="${pick(['{{url}}', 'https://x.test/'])}">${gen(depth + 1)}</a>` : `<${el}>${gen(depth + 1)}</${el}>`
        } else if (r < 0.78) out += pick(['<br>', '<hr>', '<img alt="pic">', '<img src="x">'])
        else if (r < 0.84) out += `{{#if ${pick(['t', 'f', 'a', 'missing'])}}}${gen(depth + 1)}{{else}}${gen(depth + 1)}{{/if}}`
        else if (r < 0.88) out += `\n{{#unless ${pick(['t', 'f'])}}}\n${gen(depth + 1)}\n{{else if ${pick(['a', 'c'])}}}${gen(depth + 1)}{{/unless}}\n`
        else out += `{{#each ${pick(['list', 'empty'])}}}${gen(depth + 1).replace(/\{\{(a|b|c)\}\}/g, '{{this}}')}{{/each}}`
      }
      return out
    }
    let derived = 0
    for (let k = 0; k < 600; k++) {
      const body = gen(0)
      const data = {
        a: pick(['A', 'alpha beta', '', '<tag> & "q"', '  spaced  out  ']), b: 'B', c: pick(['', 'see']), obj: { x: 'X' }, t: true, f: false,
        list: pick([['l1', 'l2'], ['one'], []]), empty: [], url: pick(['https://u.test/?q=1', '', 'mailto:x@y.test', '#top']),
      }
      if (textStrategy(body) === 'template') derived++
      const r = renderEmail({ subject: 's', body }, templateVariables({ data }))
      expect({ body, data, text: r.text }).toEqual({ body, data, text: htmlToText(r.html) })
    }
    expect(derived).toBeGreaterThan(400)
  })

  test('sources the derivation cannot carry faithfully are converted per render', () => {
    for (const src of ['<p>{{{html}}}</p>', '<p>&#123;&#123;literal}} {{name}}</p>', '<p>\\{{name}} {{name}}</p>', '<p class="{{#if a}}x{{/if}}">{{#if a}}y{{/if}}</p>']) {
      const v = templateVariables({ data: { html: '<b>bold</b>', name: 'N', a: true } })
      const r = renderEmail({ subject: 's', body: src }, v)
      expect(r.text).toBe(htmlToText(r.html))
    }
    expect(textStrategy('<p>{{{html}}}</p>')).toBe('per-render')
    expect(renderEmail({ subject: 's', body: '<p>{{{html}}}</p>' }, templateVariables({ data: { html: '<b>bold</b> &amp; co' } })).text).toBe('bold & co')
    expect(renderEmail({ subject: 's', body: '<p>&#123;&#123;literal}} {{name}}</p>' }, templateVariables({ data: { name: 'N' } })).text).toBe('{{literal}} N')
  })

  test('htmlToText: entities, whitespace, pre, nested display:none, stray "<"', () => {
    expect(htmlToText('<p>a&nbsp;&lt;b&gt; &#169; &#x263A; &unknown;</p>')).toBe('a <b> © ☺ &unknown;')
    expect(htmlToText('<div>  many \n\n  spaces  </div><pre>  keep\n   this</pre>')).toBe('many spaces\n\n  keep\n   this')
    expect(htmlToText('<div style="display: none"><div>inner</div>still hidden</div>shown')).toBe('shown')
    expect(htmlToText('1 < 2 and 3 <4')).toBe('1 < 2 and 3 <4')
    expect(htmlToText('<a href="mailto:x@y.test">write</a> <a href="#top">top</a> <a href="https://u.test"></a>')).toBe('write [x@y.test] top https://u.test')
  })
})
