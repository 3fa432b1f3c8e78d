import { type Block, type BlockStyle, DEFAULT_SETTINGS, type Design, newBlock } from './design'

/** The starter designs: six emails a user starts from, each built from the editor's blocks. */

const h = (text: string, level: 1 | 2 | 3 = 1, style: BlockStyle = {}): Block => ({ ...newBlock('heading'), text, level, style: { padding: 16, ...style } })
const p = (html: string, style: BlockStyle = {}): Block => ({ ...newBlock('text'), html, style: { padding: 16, ...style } })
const btn = (text: string, url: string, style: BlockStyle = {}): Block => ({ ...newBlock('button'), text, url, style: { ...newBlock('button').style, ...style } })
const img = (alt: string): Block => ({ ...newBlock('image'), src: '', alt })
const footer = (): Block => newBlock('footer')
const design = (blocks: Block[], settings: Partial<Design['settings']> = {}): Design => ({ version: 1, mode: 'visual', settings: { ...DEFAULT_SETTINGS, ...settings }, blocks })

export interface Starter { id: string; name: string; description: string; subject: string; make: () => Design }

export const STARTERS: Starter[] = [
  {
    id: 'welcome', name: 'Welcome', description: 'Greets a new signup and points to the first step.',
    subject: 'Welcome, {{ firstName | default: "there" }}!',
    make: () => design([
      h('Welcome aboard, {{ firstName | default: "there" }}!', 1, { align: 'center' }),
      p('<p>Thanks for signing up. Here is how to get the most out of your first week:</p><ul><li>Set up your profile</li><li>Invite your team</li><li>Send your first email</li></ul>'),
      btn('Get started', 'https://example.com/start'),
      newBlock('divider'),
      p('<p>Questions? Just reply to this email, we read every message.</p>', { color: '#4b5563' }),
      footer(),
    ]),
  },
  {
    id: 'newsletter', name: 'Newsletter', description: 'A lead story, two columns of news and links to follow.',
    subject: 'This month at Acme',
    make: () => design([
      h('The monthly digest', 1, { align: 'center', background: '#eef2ff', padding: 24 }),
      img('Our lead story'),
      h('The lead story', 2),
      p('<p>Open with the story that matters most this month, in two or three sentences.</p>'),
      btn('Read the story', 'https://example.com/blog', { align: 'left' }),
      newBlock('divider'),
      { ...newBlock('columns'), columns: [[h('News one', 3), p('<p>A short summary and <a href="https://example.com">a link</a>.</p>')], [h('News two', 3), p('<p>Another summary and <a href="https://example.com">a link</a>.</p>')]] },
      newBlock('social'),
      footer(),
    ]),
  },
  {
    id: 'product-update', name: 'Product update', description: 'Announces what is new, with an image and three highlights.',
    subject: 'New: {{ feature | default: "what we shipped this month" }}',
    make: () => design([
      h('What\'s new', 1),
      img('The new feature'),
      p('<p>Hi {{ firstName | default: "there" }}, here is what we shipped:</p><ul><li><strong>Faster search</strong> across everything</li><li><strong>Dark mode</strong> on every page</li><li><strong>Exports</strong> to CSV</li></ul>'),
      btn('Try it now', 'https://example.com/changelog'),
      footer(),
    ], { contentBackground: '#ffffff', background: '#eef2ff' }),
  },
  {
    id: 'receipt', name: 'Receipt', description: 'An order confirmation with the amounts in columns.',
    subject: 'Your receipt {{ orderId | default: "" }}',
    make: () => design([
      h('Thanks for your order', 1),
      p('<p>Order <strong>{{ orderId | default: "—" }}</strong>, paid on {{ date | default: "today" }}.</p>'),
      newBlock('divider'),
      { ...newBlock('columns'), columns: [[p('<p>{{ item | default: "Your purchase" }}</p>', { padding: 8 })], [p('<p><strong>{{ total | default: "" }}</strong></p>', { padding: 8, align: 'right' })]] },
      newBlock('divider'),
      btn('View your order', 'https://example.com/orders', { align: 'left' }),
      p('<p>Keep this email for your records.</p>', { color: '#6b7280', fontSize: 13 }),
      footer(),
    ], { font: 'Sans' }),
  },
  {
    id: 'password-reset', name: 'Password reset', description: 'A single clear button and what to do if it was not you.',
    subject: 'Reset your password',
    make: () => design([
      h('Reset your password', 1, { align: 'center' }),
      p('<p>Someone asked to reset the password of the account of {{ email }}. The link works for one hour.</p>', { align: 'center' }),
      btn('Choose a new password', '{{ resetUrl | default: "https://example.com/reset" }}'),
      p('<p>If it was not you, ignore this email: your password stays as it is.</p>', { color: '#6b7280', fontSize: 13, align: 'center' }),
    ]),
  },
  {
    id: 'event', name: 'Event invitation', description: 'Date, place and a button to register.',
    subject: 'You\'re invited: {{ eventName | default: "our next event" }}',
    make: () => design([
      img('The event'),
      h('You\'re invited', 1, { align: 'center' }),
      p('<p>Join us for <strong>{{ eventName | default: "our next event" }}</strong>.</p>', { align: 'center' }),
      { ...newBlock('columns'), columns: [[h('When', 3, { align: 'center' }), p('<p>{{ eventDate | default: "Thursday, 6 pm" }}</p>', { align: 'center' })], [h('Where', 3, { align: 'center' }), p('<p>{{ eventPlace | default: "Online" }}</p>', { align: 'center' })]] },
      btn('Save my seat', 'https://example.com/register'),
      newBlock('social'),
      footer(),
    ], { background: '#fdf2f8' }),
  },
]
