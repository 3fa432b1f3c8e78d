/**
 * The starter designs by name: the pages that create a template or a campaign offer these
 * without loading the editor's bundle; web/editor/starters.ts builds each one.
 */
export const STARTER_NAMES: Array<{ id: string; name: string }> = [
  { id: 'blank', name: 'Blank design' },
  { id: 'welcome', name: 'Welcome' },
  { id: 'newsletter', name: 'Newsletter' },
  { id: 'product-update', name: 'Product update' },
  { id: 'receipt', name: 'Receipt' },
  { id: 'password-reset', name: 'Password reset' },
  { id: 'event', name: 'Event invitation' },
]
