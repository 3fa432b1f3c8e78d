/**
 * Template rendering, single core: renders per second of a ~5 KB HTML email with 10 variables
 * (subject + HTML + plain-text alternative, i.e. everything renderEmail returns). Target: >= 50,000/s.
 * Also shown: the same with the per-message variable merge, a heavier body on the full Handlebars
 * runtime (blocks, 40 placeholders), and the per-render text fallback. Prints figures, asserts nothing.
 *
 *   node_modules/.bin/bun bench/render.ts
 *
 * "wall" counts renders per elapsed second; "cpu" per second of this process's CPU time, which is the
 * fairer figure when other work shares the machine.
 */
import { renderEmail, templateVariables, textStrategy, type TemplateVars } from '../src/mail/render'

const VARS = ['firstName', 'lastName', 'company', 'plan', 'city', 'orderId', 'amount', 'date', 'unsubscribeUrl', 'manageUrl']

/** A newsletter-like body: head with styles, a layout table, paragraphs, links, a footer. */
function body(size: number, slots: string[]): string {
  const html = '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Newsletter</title>'
    + '<style>body{margin:0;padding:0}p{font-family:Arial,sans-serif;font-size:14px;line-height:20px}</style></head>'
    + '<body><table width="100%" cellpadding="0" cellspacing="0"><tr><td align="center"><table width="600">'
  const footer = '</table></td></tr></table></body></html>'
  let i = 0
  const paragraphs: string[] = []
  while (html.length + paragraphs.join('').length + footer.length < size) {
    paragraphs.push(`<tr><td><p style="color:#333333">Paragraph ${i} of this month's update: product news, <a href="https://example.com/articles/${i}?utm_source=newsletter">read the article</a> and <strong>highlights</strong> for our readers.</p></td></tr>\n`)
    i++
  }
  // Spread the placeholders evenly through the paragraphs.
  slots.forEach((slot, k) => {
    const at = Math.floor((k * paragraphs.length) / slots.length)
    paragraphs[at] = paragraphs[at].replace('<p style="color:#333333">', `<p style="color:#333333">${slot} `)
  })
  return html + paragraphs.join('') + footer
}

function bench(label: string, render: () => unknown, seconds = 3) {
  for (let i = 0; i < 2_000; i++) render() // warm-up (JIT, cache)
  let n = 0
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  while (performance.now() - t0 < seconds * 1000) {
    for (let k = 0; k < 200; k++) render()
    n += 200
  }
  const wall = (performance.now() - t0) / 1000
  const c = process.cpuUsage(c0)
  const cpu = (c.user + c.system) / 1e6
  console.log(`${label}: ${Math.round(n / wall).toLocaleString('en')} renders/s wall, ${Math.round(n / cpu).toLocaleString('en')} renders/s cpu (${n.toLocaleString('en')} renders)`)
}

const contactData: Record<string, unknown> = {
  firstName: 'Ann', lastName: "O'Neil", company: 'Acme & Sons <Ltd>', plan: 'Pro', city: 'Zürich',
  orderId: 'A-10042', amount: '1,299.00 €', date: '2026-11-21',
}
const urls = {
  unsubscribeUrl: 'https://mail.example.com/u/eyJhbGciOiJIUzI1NiJ9.abc?x=1&y=2',
  subscribeUrl: 'https://mail.example.com/s/abc',
  manageUrl: 'https://mail.example.com/m/abc',
}
const vars: TemplateVars = templateVariables({ contact: { id: 'c1', email: 'ann@example.org', data: contactData }, urls })

// 1. The target case: ~5 KB, 10 variables, each placed once.
const main = body(4_800, VARS.map((v) => (v.endsWith('Url') ? `<a href="{{${v}}}">link</a>` : `{{${v}}}`)))
const subject = 'Your {{plan}} update, {{firstName}}'
const sample = renderEmail({ subject, body: main }, vars)
if (!sample.html.includes('Acme &amp; Sons &lt;Ltd&gt;') || !sample.text.includes('Acme & Sons <Ltd>')) throw new Error('unexpected render output')
console.log(`body ${main.length} chars, ${VARS.length} variables, text strategy: ${textStrategy(main)}; output html ${sample.html.length} chars, text ${sample.text.length} chars`)
bench('renderEmail, 5 KB body, 10 variables', () => renderEmail({ subject, body: main }, vars))

// 2. The same, with the template source re-read per message (a fresh string each time) and the variable
//    merge of each message (contact data + request data with a persistent:false value + URLs).
const sources = Array.from({ length: 16 }, () => ` ${main}`.slice(1))
let s = 0
bench('  + fresh source string and templateVariables per message', () => renderEmail(
  { subject, body: sources[s++ & 15] },
  templateVariables({ contact: { id: 'c1', email: 'ann@example.org', data: contactData }, data: { orderId: { value: 'B-7', persistent: false } }, urls }),
))

// 3. Heavier: 40 placeholders plus #if/#each blocks (full Handlebars runtime for HTML and text).
const heavySlots = Array.from({ length: 40 }, (_, i) => `{{${VARS[i % 8]}}}`)
heavySlots[5] = '{{#if plan}}<b>{{plan}} member</b>{{else}}free member{{/if}}'
heavySlots[20] = '<ul>{{#each items}}<li>{{name}}: {{price}}</li>{{/each}}</ul>'
const heavy = body(4_700, heavySlots)
const heavyVars = templateVariables({ contact: { email: 'ann@example.org', data: { ...contactData, items: [{ name: 'A', price: '1 €' }, { name: 'B', price: '2 €' }, { name: 'C', price: '3 €' }] } }, urls })
console.log(`heavy body ${heavy.length} chars, text strategy: ${textStrategy(heavy)}`)
bench('renderEmail, 5 KB body, 40 placeholders + if/each blocks', () => renderEmail({ subject, body: heavy }, heavyVars))

// 4. A body with raw {{{html}}}: its text alternative is converted from each rendered HTML.
const raw = body(4_800, [...VARS.slice(0, 9).map((v) => `{{${v}}}`), '{{{snippet}}}'])
const rawVars = templateVariables({ contact: { email: 'ann@example.org', data: { ...contactData, snippet: '<em>raw html</em>' } }, urls })
console.log(`raw body text strategy: ${textStrategy(raw)}`)
bench('renderEmail, 5 KB body with {{{raw}}} (per-render text conversion)', () => renderEmail({ subject, body: raw }, rawVars))
