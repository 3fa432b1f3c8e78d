import { type Block, type BlockStyle, DEFAULT_SETTINGS, type Design, newBlock } from './design'
import { type MessageKey, t } from '../i18n'

/**
 * The starter designs: six emails a user starts from, each built from the editor's blocks. Their names,
 * descriptions and the texts they start with come from the message catalogue, in the language in effect
 * when the design is made: a German user starts from German text, which is then the design's own (saved as
 * written, not translated again later).
 */

const h = (text: string, level: 1 | 2 | 3 = 1, style: BlockStyle = {}): Block => ({ ...newBlock('heading'), text, level, style: { padding: 16, ...style } })
const p = (html: string, style: BlockStyle = {}): Block => ({ ...newBlock('text'), html, style: { padding: 16, ...style } })
const btn = (text: string, url: string, style: BlockStyle = {}): Block => ({ ...newBlock('button'), text, url, style: { ...newBlock('button').style, ...style } })
const img = (alt: string): Block => ({ ...newBlock('image'), src: '', alt })
const footer = (): Block => newBlock('footer')
const design = (blocks: Block[], settings: Partial<Design['settings']> = {}): Design => ({ version: 1, mode: 'visual', settings: { ...DEFAULT_SETTINGS, ...settings }, blocks })

export interface Starter { id: string; name: string; description: string; subject: string; make: () => Design }

/** A starter's text by its key under `ed.st.<name>.` of the catalogue. */
const s = (name: string, key: string): string => t(`ed.st.${name}.${key}` as MessageKey)

/** The starters, named and described in the language in effect now. */
export function starters(): Starter[] {
  return [
    {
      id: 'welcome', name: t('tpl.starter.welcome'), description: s('welcome', 'description'), subject: s('welcome', 'subject'),
      make: () => design([
        h(s('welcome', 'heading'), 1, { align: 'center' }),
        p(s('welcome', 'intro')),
        btn(s('welcome', 'button'), 'https://example.com/start'),
        newBlock('divider'),
        p(s('welcome', 'reply'), { color: '#4b5563' }),
        footer(),
      ]),
    },
    {
      id: 'newsletter', name: t('tpl.starter.newsletter'), description: s('newsletter', 'description'), subject: s('newsletter', 'subject'),
      make: () => design([
        h(s('newsletter', 'heading'), 1, { align: 'center', background: '#eef2ff', padding: 24 }),
        img(s('newsletter', 'imageAlt')),
        h(s('newsletter', 'lead'), 2),
        p(s('newsletter', 'leadText')),
        btn(s('newsletter', 'button'), 'https://example.com/blog', { align: 'left' }),
        newBlock('divider'),
        { ...newBlock('columns'), columns: [[h(s('newsletter', 'news1'), 3), p(s('newsletter', 'news1Text'))], [h(s('newsletter', 'news2'), 3), p(s('newsletter', 'news2Text'))]] },
        newBlock('social'),
        footer(),
      ]),
    },
    {
      id: 'product-update', name: t('tpl.starter.product-update'), description: s('product', 'description'), subject: s('product', 'subject'),
      make: () => design([
        h(s('product', 'heading'), 1),
        img(s('product', 'imageAlt')),
        p(s('product', 'text')),
        btn(s('product', 'button'), 'https://example.com/changelog'),
        footer(),
      ], { contentBackground: '#ffffff', background: '#eef2ff' }),
    },
    {
      id: 'receipt', name: t('tpl.starter.receipt'), description: s('receipt', 'description'), subject: s('receipt', 'subject'),
      make: () => design([
        h(s('receipt', 'heading'), 1),
        p(s('receipt', 'order')),
        newBlock('divider'),
        { ...newBlock('columns'), columns: [[p(s('receipt', 'item'), { padding: 8 })], [p('<p><strong>{{ total | default: "" }}</strong></p>', { padding: 8, align: 'right' })]] },
        newBlock('divider'),
        btn(s('receipt', 'button'), 'https://example.com/orders', { align: 'left' }),
        p(s('receipt', 'keep'), { color: '#6b7280', fontSize: 13 }),
        footer(),
      ], { font: 'Sans' }),
    },
    {
      id: 'password-reset', name: t('tpl.starter.password-reset'), description: s('reset', 'description'), subject: s('reset', 'subject'),
      make: () => design([
        h(s('reset', 'heading'), 1, { align: 'center' }),
        p(s('reset', 'text'), { align: 'center' }),
        btn(s('reset', 'button'), '{{ resetUrl | default: "https://example.com/reset" }}'),
        p(s('reset', 'notYou'), { color: '#6b7280', fontSize: 13, align: 'center' }),
      ]),
    },
    {
      id: 'event', name: t('tpl.starter.event'), description: s('event', 'description'), subject: s('event', 'subject'),
      make: () => design([
        img(s('event', 'imageAlt')),
        h(s('event', 'heading'), 1, { align: 'center' }),
        p(s('event', 'join'), { align: 'center' }),
        { ...newBlock('columns'), columns: [[h(s('event', 'when'), 3, { align: 'center' }), p(s('event', 'date'), { align: 'center' })], [h(s('event', 'where'), 3, { align: 'center' }), p(s('event', 'place'), { align: 'center' })]] },
        btn(s('event', 'button'), 'https://example.com/register'),
        newBlock('social'),
        footer(),
      ], { background: '#fdf2f8' }),
    },
  ]
}
