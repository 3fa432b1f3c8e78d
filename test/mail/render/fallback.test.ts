import { describe, expect, test } from 'bun:test'
import { renderEmail, renderSubject, textStrategy, validateTemplateSource } from '../../../src/mail/render'
import { COMPILE_OPTIONS, parse, rewriteFallbacks, TEXT_COMPILE_OPTIONS, toRenderFn } from '../../../src/mail/render/sandbox'

/**
 * Fallbacks (issue 36): Plunk's `{{ name | default: "there" }}` renders as Plunk renders it (LiquidJS's
 * `default` filter with `jsTruthy`): the literal when the value is missing, null, false, 0, "" or [].
 */
describe('Liquid-style fallbacks', () => {
  const src = '<p>Hi {{ name | default: "there" }}, {{{ html | default: \'<i>none</i>\' }}}</p>'

  test('the value when there is one, the literal when there is none, on the fast path and the Handlebars runtime', () => {
    const fast = toRenderFn(parse(src), COMPILE_OPTIONS)
    const slow = toRenderFn(parse(`{{#if on}}${src}{{/if}}`), COMPILE_OPTIONS)
    for (const render of [fast, (v: Record<string, unknown>) => slow({ ...v, on: true })]) {
      expect(render({ name: 'Ann', html: '<b>x</b>' })).toBe('<p>Hi Ann, <b>x</b></p>')
      expect(render({})).toBe('<p>Hi there, <i>none</i></p>')
      // Values are escaped as every {{value}} is; the fallback literal is the template's own text.
      expect(render({ name: '<Ann & co>' })).toContain('Hi &lt;Ann &amp; co&gt;,')
    }
  })

  test('what counts as missing is what LiquidJS default with jsTruthy counts: undefined, null, false, 0, "", []', () => {
    const render = toRenderFn(parse('[{{ v | default: "fb" }}]'), TEXT_COMPILE_OPTIONS)
    for (const v of [undefined, null, false, 0, '', []]) expect(render({ v })).toBe('[fb]')
    for (const [v, out] of [['x', 'x'], [1, '1'], [true, 'true'], [' ', ' '], ['0', '0']] as const) expect(render({ v })).toBe(`[${out}]`)
    expect(toRenderFn(parse('{{#if t}}[{{ v | default: "fb" }}]{{/if}}'), TEXT_COMPILE_OPTIONS)({ t: 1, v: 0 })).toBe('[fb]')
  })

  test('nested paths, single quotes, no spaces, and the subject; a plain {{name}} is unchanged', () => {
    expect(renderSubject('{{company.name|default:\'Acme\'}} / {{ name }}', { name: 'Bo' })).toBe('Acme / Bo')
    expect(renderSubject('{{company.name | default: "Acme"}}', { company: { name: 'Zed' } })).toBe('Zed')
  })

  test('the rewrite keeps every position: same length, same lines', () => {
    const s = 'a {{ name | default: "there" }}\nb {{{x|default:\'y\'}}} c'
    const r = rewriteFallbacks(s)
    expect(r.length).toBe(s.length)
    expect(r.split('\n').map((l) => l.length)).toEqual(s.split('\n').map((l) => l.length))
    expect(r).not.toContain('default:')
  })

  test('a test send to someone without data: no ", 30% off" — the text part falls back too', () => {
    const r = renderEmail({ subject: '{{ firstName | default: "Friend" }}, 30% off', body: '<p>{{ firstName | default: "Hello there" }}, 30% off today.</p>' }, {})
    expect(r.subject).toBe('Friend, 30% off')
    expect(r.html).toBe('<p>Hello there, 30% off today.</p>')
    expect(r.text).toBe('Hello there, 30% off today.')
    const withName = renderEmail({ subject: 's', body: '<p>{{ firstName | default: "Hello there" }}, 30% off today.</p>' }, { firstName: 'Ann' })
    expect(withName.text).toBe('Ann, 30% off today.')
    // The text part stays a template derived once, not a conversion per recipient.
    expect(textStrategy('<p>{{ firstName | default: "Hello there" }}, 30% off today.</p>')).toBe('template')
  })

  test('Markdown bodies take fallbacks too', () => {
    const r = renderEmail({ subject: 's', body: '# Hi {{ name | default: "there" }}', format: 'markdown' }, {})
    expect(r.html).toContain('<h1>Hi there</h1>')
  })

  test('other Liquid filters are not supported: saving such a template is a 422', () => {
    expect(() => validateTemplateSource({ body: '{{ name | upcase }}' })).toThrow(/does not compile/)
    expect(() => validateTemplateSource({ body: '{{ name | default: there }}' })).toThrow(/does not compile/)
    expect(() => validateTemplateSource({ body: '{{ name | default: "there" }}' })).not.toThrow()
  })
})
