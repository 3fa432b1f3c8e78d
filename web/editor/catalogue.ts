import type { MessageKey } from '../i18n'

/**
 * The starter designs by name: the pages that create a template or a campaign offer these
 * without loading the editor's bundle; web/editor/starters.ts builds each one. `label` is the name's key
 * in the message catalogue.
 */
export const STARTER_NAMES: Array<{ id: string; label: MessageKey }> = [
  { id: 'blank', label: 'tpl.starter.blank' },
  { id: 'welcome', label: 'tpl.starter.welcome' },
  { id: 'newsletter', label: 'tpl.starter.newsletter' },
  { id: 'product-update', label: 'tpl.starter.product-update' },
  { id: 'receipt', label: 'tpl.starter.receipt' },
  { id: 'password-reset', label: 'tpl.starter.password-reset' },
  { id: 'event', label: 'tpl.starter.event' },
]
