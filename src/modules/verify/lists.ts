/**
 * The small hand-kept lists behind /v1/verify. The large ones come from maintained packages:
 * disposable domains from `mailchecker`, free-mail providers from `email-providers` (see service.ts).
 */

/**
 * Popular mailbox providers: the targets of typo detection, and never typos themselves. Order matters
 * only to break ties (most used first).
 */
export const POPULAR_DOMAINS = [
  'gmail.com', 'yahoo.com', 'hotmail.com', 'outlook.com', 'icloud.com', 'aol.com', 'live.com', 'msn.com',
  'googlemail.com', 'me.com', 'mac.com', 'protonmail.com', 'proton.me', 'pm.me', 'gmx.com', 'gmx.net', 'gmx.de',
  'web.de', 'mail.com', 'email.com', 'yandex.ru', 'yandex.com', 'mail.ru', 'zoho.com', 'fastmail.com',
  'ymail.com', 'rocketmail.com', 'comcast.net', 'verizon.net', 'att.net', 'sbcglobal.net', 'bellsouth.net',
  'cox.net', 'charter.net', 'earthlink.net', 'yahoo.co.uk', 'yahoo.fr', 'yahoo.de', 'yahoo.es', 'yahoo.it',
  'yahoo.co.jp', 'yahoo.com.br', 'hotmail.co.uk', 'hotmail.fr', 'hotmail.de', 'hotmail.it', 'hotmail.es',
  'outlook.fr', 'outlook.de', 'live.co.uk', 'live.fr', 'btinternet.com', 'orange.fr', 'wanadoo.fr', 'free.fr',
  'laposte.net', 'sfr.fr', 't-online.de', 'freenet.de', 'libero.it', 'virgilio.it', 'tiscali.it', 'qq.com',
  '163.com', '126.com', 'naver.com', 'daum.net', 'hanmail.net', 'rediffmail.com', 'uol.com.br', 'bol.com.br',
  'seznam.cz', 'wp.pl', 'o2.pl', 'interia.pl', 'shaw.ca', 'rogers.com', 'sympatico.ca', 'bigpond.com',
  'optusnet.com.au', 'tutanota.com', 'tuta.io', 'hey.com',
] as const

/**
 * Top-level domains typed wrong for the common ones (checked only against POPULAR_DOMAINS, so a real
 * .co or .cm address elsewhere is never flagged).
 */
export const TLD_TYPOS: Record<string, string> = {
  con: 'com', cmo: 'com', ocm: 'com', cm: 'com', om: 'com', co: 'com', comm: 'com', coom: 'com', cpm: 'com',
  vom: 'com', xom: 'com', cim: 'com', clm: 'com', cok: 'com', comn: 'com', ccom: 'com',
  nte: 'net', ner: 'net', bet: 'net', nt: 'net', met: 'net', nett: 'net',
  ed: 'de', dee: 'de', fe: 'de', rf: 'fr', ft: 'fr', frr: 'fr',
  'co.ku': 'co.uk', 'co.k': 'co.uk', 'couk': 'co.uk', 'cuk': 'co.uk',
}

/**
 * Forwarding and alias services: the address relays to a mailbox the sender never sees (Apple Hide My
 * Email, Firefox Relay, SimpleLogin, addy.io, DuckDuckGo Email Protection, Proton Pass, 33mail, Cloaked,
 * IronVest). They are long-lived, so they count as aliases, not as disposable.
 */
export const RELAY_DOMAINS = new Set([
  'privaterelay.appleid.com', 'mozmail.com', 'simplelogin.com', 'simplelogin.fr', 'simplelogin.co', 'simplelogin.io',
  'aleeas.com', 'slmail.me', 'dralias.com', '8shield.net', 'anonaddy.com', 'anonaddy.me', 'addy.io', 'duck.com',
  '33mail.com', '33m.co', 'passmail.com', 'passmail.net', 'passinbox.com', 'passfwd.com', 'cloak.id', 'opayq.com',
  'erine.email',
])

/**
 * Role mailboxes (RFC 2142 and the usual team addresses): they reach a function or a group, not one
 * person. Matched against the local part without its +tag.
 */
export const ROLE_LOCAL_PARTS = new Set([
  'abuse', 'postmaster', 'hostmaster', 'webmaster', 'noc', 'security', 'usenet', 'news', 'uucp', 'www', 'ftp',
  'info', 'marketing', 'sales', 'support', 'admin', 'administrator', 'root', 'contact', 'help', 'helpdesk',
  'office', 'billing', 'accounts', 'accounting', 'finance', 'hr', 'jobs', 'careers', 'team', 'hello', 'press',
  'media', 'legal', 'privacy', 'compliance', 'service', 'services', 'enquiries', 'inquiries', 'feedback',
  'noreply', 'no-reply', 'donotreply', 'do-not-reply', 'mailer-daemon', 'list', 'lists', 'all', 'everyone',
  'staff', 'orders', 'shop', 'store', 'reservations', 'bookings', 'events', 'newsletter', 'subscribe', 'unsubscribe',
])

/** RFC 2606 / RFC 6761 names that never receive real mail, even when a provider list carries them. */
export const RESERVED_SUFFIXES = ['example', 'example.com', 'example.net', 'example.org', 'test', 'invalid', 'localhost', 'local']
