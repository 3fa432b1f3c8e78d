import { describe, expect, test } from 'bun:test'
import { markdownInlineToHtml, markdownToHtml, renderEmail, validateTemplateSource } from '../../../src/mail/render'

/** Markdown bodies: variables first, as text; then Markdown. And the API's own Markdown (/docs). */

const md = (body: string, vars: Record<string, unknown> = {}) => renderEmail({ subject: 's', body, format: 'markdown' }, vars)

describe('Markdown bodies', () => {
  test('the source is Markdown: headings, emphasis, lists, links, code', () => {
    const { html, text } = md('# Hi {{name}}\n\n**bold** _it_ `code`\n\n- one\n- two\n\n[docs](https://example.com/docs)', { name: 'Ann' })
    expect(html).toContain('<h1>Hi Ann</h1>')
    expect(html).toContain('<strong>bold</strong> <em>it</em> <code>code</code>')
    expect(html).toContain('<ul>\n<li>one</li>\n<li>two</li>\n</ul>')
    expect(html).toContain('<a href="https://example.com/docs">docs</a>')
    expect(text).toContain('Hi Ann')
    expect(text).not.toContain('**')
  })

  test('a value never becomes Markdown or HTML, wherever it is inserted', () => {
    const evil = '**b** _i_ [x](javascript:alert(1)) ![i](http://t.example/p.png) <img src=x onerror=alert(1)> &amp; `c`\n\n# h\n    code\n- li\n1. ol\n| a | b |\n---\n> q www.evil.example https://evil.example a@evil.example'
    const { html } = md('{{v}}\n\n# {{v}}\n\n- {{v}}\n\n**{{v}}** `{{v}}` {{{v}}} {{& v}}', { v: evil })
    for (const tag of ['<img', '<a ', '<strong>b', '<em>i', '<h1>h', '<pre', '<ol', '<table', '<blockquote', '<hr', '<code>c']) expect(html).not.toContain(tag)
    // The author's own structure is there, around the values shown as text.
    expect(html).toContain('<h1>**b** _i_ [x](javascript:alert(1))')
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt; &amp;amp; `c`')
    expect(html).toContain('<li>**b**')
    expect(html).toContain('<strong>**b**')
    expect(html).toContain('<code>**b**')
    expect(html.match(/<li>/g)).toHaveLength(1)
    expect(html.match(/<strong>/g)).toHaveLength(1)
    expect(html.match(/<code>/g)).toHaveLength(1)
  })

  test('values keep their characters: in text, in a code span and in a link destination', () => {
    const url = 'https://example.com/u?t=a_b-c.d&x=1#frag'
    const { html, text } = md('[unsubscribe]({{url}}) `{{url}}` {{name}}', { url, name: "O'Brien & \"Co\" <co@example.com>" })
    expect(html).toContain('<a href="https://example.com/u?t=a_b-c.d&amp;x=1#frag">unsubscribe</a>')
    expect(html).toContain('<code>https://example.com/u?t=a_b-c.d&amp;x=1#frag</code>')
    expect(html).toContain('O&#39;Brien &amp; &quot;Co&quot; &lt;co@example.com&gt;')
    expect(text).toContain(`O'Brien & "Co" <co@example.com>`)
    expect(html).not.toMatch(/[\uF700-\uF77F]/)
  })

  test('blocks decide with the real values; an empty value is still falsy', () => {
    expect(md('{{#if v}}yes{{else}}no{{/if}}', { v: '' }).html).toBe('<p>no</p>\n')
    expect(md('{{#each items}}- {{this}}\n{{/each}}', { items: ['*a*', 'b'] }).html).toBe('<ul>\n<li>*a*</li>\n<li>b</li>\n</ul>\n')
    expect(md('{{n}} and {{b}}', { n: 0, b: true }).html).toBe('<p>0 and true</p>\n')
  })

  test('raw HTML written in the source is kept; a private-use stand-in in a value is dropped', () => {
    expect(md('<div class="box">Hi</div>\n\ntext').html).toContain('<div class="box">Hi</div>')
    expect(md('{{v}}', { v: 'a\uF73Cb' }).html).toBe('<p>ab</p>\n')
  })

  test('a Markdown source that does not compile is a 422 on body', () => {
    expect(() => validateTemplateSource({ body: '# {{#if x}}', format: 'markdown' })).toThrow(/body/)
  })

  test('the HTML format is unchanged: Markdown syntax stays as written', () => {
    const { html } = renderEmail({ subject: 's', body: '**{{v}}**' }, { v: '<b>' })
    expect(html).toBe('**&lt;b&gt;**')
  })
})

describe('Markdown of the API\'s own texts', () => {
  test('backticks, bold, lists and links; raw HTML shown as text', () => {
    const html = markdownToHtml('Use `to` and **from**:\n\n- one\n- two\n\n[API](https://example.com) <script>x</script>')
    expect(html).toContain('<code>to</code>')
    expect(html).toContain('<strong>from</strong>')
    expect(html).toContain('<li>one</li>')
    expect(html).toContain('<a href="https://example.com">API</a>')
    expect(html).toContain('&lt;script&gt;')
    expect(html).not.toContain('<script>')
    expect(markdownInlineToHtml('One `email`')).toBe('One <code>email</code>')
  })
})
