import { describe, expect, test } from 'bun:test'
import { COMPILE_OPTIONS, parse, TEXT_COMPILE_OPTIONS, TemplateSyntaxError, toRenderFn, walk } from '../../../src/mail/render/sandbox'

describe('parse', () => {
  test('walk visits every node in source order: paths, params, hash values, both branches', () => {
    const seen: string[] = []
    walk(parse('{{#if a}}{{b x=(lookup c "k")}}{{else}}{{#each d}}{{e}}{{/each}}{{/if}}'), (n) => {
      if (n.type === 'PathExpression') seen.push((n as hbs.AST.PathExpression).original)
    })
    expect(seen).toEqual(['if', 'a', 'b', 'lookup', 'c', 'each', 'd', 'e'])
  })

  test('refusals name the line: partials, decorators, wrong helper arity', () => {
    const refused = (source: string) => {
      try {
        parse(source)
      } catch (err) {
        expect(err).toBeInstanceOf(TemplateSyntaxError)
        return (err as Error).message
      }
      throw new Error(`${source} was accepted`)
    }
    expect(refused('ok\n{{> header}}')).toBe('Partials are not supported (line 2)')
    expect(refused('\n\n{{#* inline "p"}}x{{/inline}}')).toBe('Decorators are not supported (line 3)')
    expect(refused('{{#if a b}}x{{/if}}')).toBe('if takes exactly 1 argument (line 1)')
    expect(refused('x\n{{lookup a}}')).toBe('lookup takes exactly 2 arguments (line 2)')
    expect(refused('{{#if a}}')).toContain('Parse error')
  })
})

describe('toRenderFn', () => {
  const vars = { name: '<b>&</b>', on: true, obj: { k: 'v' } }

  test('HTML options escape {{value}} but not {{{value}}}, on the fast path and on the Handlebars runtime', () => {
    expect(toRenderFn(parse('{{name}}|{{{name}}}|{{obj.k}}'), COMPILE_OPTIONS)(vars)).toBe('&lt;b&gt;&amp;&lt;/b&gt;|<b>&</b>|v')
    expect(toRenderFn(parse('{{#if on}}{{name}}|{{{name}}}{{/if}}'), COMPILE_OPTIONS)(vars)).toBe('&lt;b&gt;&amp;&lt;/b&gt;|<b>&</b>')
  })

  test('text options escape nothing, on both paths', () => {
    expect(toRenderFn(parse('{{name}}|{{{name}}}'), TEXT_COMPILE_OPTIONS)(vars)).toBe('<b>&</b>|<b>&</b>')
    expect(toRenderFn(parse('{{#with obj}}{{k}}{{/with}} {{name}}'), TEXT_COMPILE_OPTIONS)(vars)).toBe('v <b>&</b>')
  })

  test('an unknown helper is refused when compiled, not when rendered', () => {
    expect(() => toRenderFn(parse('{{#custom a}}x{{/custom}}'), COMPILE_OPTIONS)).toThrow(TemplateSyntaxError)
    expect(() => toRenderFn(parse('{{log "x"}}'), COMPILE_OPTIONS)).toThrow(TemplateSyntaxError)
  })
})
