import { describe, expect, test } from 'bun:test'
import { convertHtml, htmlToText, type Marked } from '../../../src/mail/render/html-to-text'
import { HARD_BREAK, LINE_BREAK, LINK_CLOSE, LINK_OPEN, MARK_OUTPUT, MARK_SILENT, PARAGRAPH_BREAK } from '../../../src/mail/render/marks'

const output = (i: number) => `${MARK_OUTPUT[0]}${i}${MARK_OUTPUT[1]}`
const silent = (i: number) => `${MARK_SILENT[0]}${i}${MARK_SILENT[1]}`
const state = (gaps: string[]): Marked => ({ gaps, unfaithful: false, linkMarks: false })

describe('htmlToText', () => {
  test('a character reference to half of a surrogate pair is U+FFFD, as a browser reads it; NUL stays as written', () => {
    expect(htmlToText('<p>a&#xD800;b &#56320; c&#0;d</p>')).toBe('a\uFFFDb \uFFFD c&#0;d')
  })
  test('paragraphs and headings are separated by a blank line, line elements by a line break', () => {
    expect(htmlToText('<h1>Title</h1><p>One</p><p>Two</p>')).toBe('Title\n\nOne\n\nTwo')
    expect(htmlToText('<div>a</div><div>b</div><section>c</section>')).toBe('a\nb\nc')
    expect(htmlToText('a<br>b<br/>c')).toBe('a\nb\nc')
    expect(htmlToText('a<hr>b')).toBe('a\n\n----\n\nb')
  })

  test('list items start with "* ", table cells are separated by a space, rows by a line', () => {
    expect(htmlToText('<ul><li>one</li><li>two</li></ul><p>after</p>')).toBe('* one\n* two\n\nafter')
    expect(htmlToText('<table><tr><td>A</td><td>B</td></tr><tr><th>C</th><td>D</td></tr></table>')).toBe('A B\nC D')
  })

  test('ordered lists keep their numbers (issue 34 item 6): "1. ", "2. "..., from `start`, an item\'s `value`, nested lists on their own', () => {
    expect(htmlToText('<ol><li>one</li><li>two</li><li>three</li></ol><p>after</p>')).toBe('1. one\n2. two\n3. three\n\nafter')
    expect(htmlToText('<ol start="4"><li>d</li><li value="9">i</li><li>j</li></ol>')).toBe('4. d\n9. i\n10. j')
    expect(htmlToText('<ol><li>a<ul><li>x</li><li>y</li></ul></li><li>b<ol><li>b1</li></ol></li></ol>')).toBe('1. a\n\n* x\n* y\n\n2. b\n\n1. b1')
    expect(htmlToText('<li>loose</li><ol><li>a</li></ol></ol><li>after</li>')).toBe('* loose\n\n1. a\n\n* after')
  })

  test('marked mode: an ordered list whose items a block can repeat or drop is converted per render', () => {
    const inside = state(['{{#each items}}', '{{/each}}'])
    convertHtml(`<ol>${silent(0)}<li>x</li>${silent(1)}</ol>`, inside)
    expect(inside.unfaithful).toBe(true)
    const around = state(['{{#if a}}', '{{/if}}'])
    convertHtml(`${silent(0)}<ol><li>x</li><li>y</li></ol>${silent(1)}`, around)
    expect(around.unfaithful).toBe(false)
    const start = state(['{{n}}'])
    convertHtml(`<ol start="${output(0)}"><li>x</li></ol>`, start)
    expect(start.unfaithful).toBe(true)
  })

  test('links: "label [url]", the URL alone when the label is empty or equal, no target for # and javascript:', () => {
    expect(htmlToText('<a href="https://x.test/a">Read</a>')).toBe('Read [https://x.test/a]')
    expect(htmlToText('<a href="https://x.test/">https://x.test/</a>')).toBe('https://x.test/')
    expect(htmlToText('<a href="https://x.test/"><img src="i.png"></a>')).toBe('https://x.test/')
    expect(htmlToText("<a href='mailto:me@x.test'>Write</a>")).toBe('Write [me@x.test]')
    expect(htmlToText('<a href="#top">Top</a> <a href="JavaScript:alert(1)">Run</a>')).toBe('Top Run')
    expect(htmlToText('<a href="https://x.test/?a=1&amp;b=2">Q</a>')).toBe('Q [https://x.test/?a=1&b=2]')
  })

  test('images become their alt text (entities decoded, whitespace folded); without alt nothing', () => {
    expect(htmlToText('<p><img src="a.png" alt="The &amp;  logo">!</p>')).toBe('The & logo!')
    expect(htmlToText('<p>x<img src="a.png">y</p>')).toBe('xy')
  })

  test('head, style, script, comments and display:none content are dropped, nested same tags included', () => {
    expect(htmlToText('<html><head><title>T</title><style>p{}</style></head><body><script>var a = "<p>x</p>"</script>body</body></html>')).toBe('body')
    expect(htmlToText('a<!-- <p>hidden</p> -->b')).toBe('ab')
    expect(htmlToText('<span style="color:red; DISPLAY : none">x<span>y</span>z</span>shown')).toBe('shown')
  })

  test('entities: named (any case), decimal and hex; zero-width ones vanish, no-break spaces become spaces', () => {
    expect(htmlToText('&AMP; &Copy; &eacute; &#65;&#x42; a&zwnj;b&#8203;c &#xA0;|')).toBe('& © &eacute; AB abc |')
    expect(htmlToText('&#0; &#x110000; &#xZZ;')).toBe('&#0; &#x110000; &#xZZ;')
  })

  test('whitespace collapses outside <pre>; no leading or trailing blank lines, no trailing spaces', () => {
    expect(htmlToText('\n\n  <p>  a \t b  </p>  \n\n')).toBe('a b')
    expect(htmlToText('<pre>  x\n\n\n  y  </pre>')).toBe('x\n\n  y')
  })
})

describe('convertHtml, marked mode', () => {
  test('breaks are written as sentinels, not newlines, and nothing else changes', () => {
    const s = state([])
    expect(convertHtml('<p>a</p><div>b</div>c<br>d', s).text).toBe(`a${PARAGRAPH_BREAK}b${LINE_BREAK}c${HARD_BREAK}d`)
    expect(convertHtml('<p>a</p><div>b</div>c<br>d', null).text).toBe('a\n\nb\nc\nd')
    expect(s).toEqual({ gaps: [], unfaithful: false, linkMarks: false })
  })

  test('a pending break goes before a silent mark (a block tag), never after it', () => {
    const text = convertHtml(`<p>x</p>${silent(0)}<p>y</p>${silent(1)}`, state(['{{#if a}}', '{{/if}}'])).text
    expect(text).toBe(`x${PARAGRAPH_BREAK}${silent(0)}${PARAGRAPH_BREAK}y${PARAGRAPH_BREAK}${silent(1)}`)
  })

  test('a link to a variable URL is wrapped in link marks, settled at render time', () => {
    const s = state(['{{url}}'])
    expect(convertHtml(`<a href="${output(0)}">Prefs</a>`, s).text).toBe(`Prefs${LINK_OPEN} [${output(0)}]${LINK_CLOSE}`)
    expect(s.linkMarks).toBe(true)
    expect(s.unfaithful).toBe(false)
  })

  test('a link whose label depends on a block is unfaithful; a static label and URL is not', () => {
    const block = state(['{{#if a}}', '{{/if}}'])
    convertHtml(`<a href="https://x.test/">${silent(0)}go${silent(1)}</a>`, block)
    expect(block.unfaithful).toBe(true)
    const fixed = state([])
    expect(convertHtml('<a href="https://x.test/">go</a>', fixed).text).toBe('go [https://x.test/]')
    expect(fixed).toEqual({ gaps: [], unfaithful: false, linkMarks: false })
  })

  test('a label that is only a variable must equal the URL to be faithful', () => {
    const same = state(['{{url}}', '{{url}}'])
    expect(convertHtml(`<a href="${output(0)}">${output(1)}</a>`, same).text).toBe(output(1))
    expect(same.unfaithful).toBe(false)
    const other = state(['{{url}}', '{{name}}'])
    convertHtml(`<a href="${output(0)}">${output(1)}</a>`, other)
    expect(other.unfaithful).toBe(true)
  })
})

/** Bodies come from API callers and contact data: the conversion must stay linear in its input. */
describe('htmlToText on hostile input (linear time; the per-test timeout is the only clock)', () => {
  test('a <pre> of a million spaces and no line break after them', () => {
    expect(htmlToText(`<pre>x${' '.repeat(1_000_000)}</pre>`)).toBe('x')
    expect(htmlToText(`<pre>${' '.repeat(1_000_000)}y</pre>`)).toBe(`${' '.repeat(1_000_000)}y`.trim())
    expect(htmlToText(`<pre>a ${' \t'.repeat(300_000)}\nb  </pre>`)).toBe('a\nb')
  }, 10_000)

  test('20,000 nested links keep their text; only the outer ones are written as " [url]"', () => {
    const depth = 20_000
    const text = htmlToText(`${'<a href="https://x.test/">'.repeat(depth)}t${'</a>'.repeat(depth)}`)
    expect(text.startsWith('t [https://x.test/]')).toBe(true)
    expect(text.split('[https://x.test/]').length - 1).toBe(8)
  }, 10_000)
})
