import { Marked } from 'marked'

/**
 * The Markdown mode's HTML: CommonMark with GitHub's extensions, as `/v1/send` reads Markdown.
 * Merge tags are set aside before and put back after, so marked neither escapes their quotes nor
 * percent-encodes them inside a link (`[Unsubscribe]({{unsubscribeUrl}})`); inside a tag their double
 * quotes become single ones.
 */
const md = new Marked({ gfm: true, breaks: false, async: false })

export function markdownBody(source: string): string {
  const tags: string[] = []
  const held = source.replace(/\{\{\{?[^{}]*\}?\}\}/g, (t) => `mctag${tags.push(t) - 1}x`)
  const back = (run: string, attr: boolean) => run.replace(/mctag(\d+)x/g, (_, i) => {
    const tag = tags[Number(i)] ?? ''
    // In an attribute (a link's href) a fallback's double quotes would end the value: single ones.
    return attr ? tag.replace(/"/g, '\'') : tag
  })
  return md.parse(held, { async: false }).replace(/<[^>]*>|[^<]+/g, (run) => back(run, run.startsWith('<')))
}
