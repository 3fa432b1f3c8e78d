import { readFileSync } from 'node:fs'
import type { Config } from '../config'

/**
 * The certificate of the SMTP servers (inbound receiver, relay) from MAILCTL_SMTP_TLS_CERT and
 * MAILCTL_SMTP_TLS_KEY: each a file path or the PEM text itself. Null when neither is set; a half
 * configuration or an unreadable file is an error at start-up, not a silent downgrade to plain text.
 */
export function smtpTls(config: Pick<Config, 'smtpTlsCert' | 'smtpTlsKey'>): { cert: Buffer; key: Buffer } | null {
  const { smtpTlsCert: cert, smtpTlsKey: key } = config
  if (!cert && !key) return null
  if (!cert || !key) throw new Error('MAILCTL_SMTP_TLS_CERT and MAILCTL_SMTP_TLS_KEY must be set together')
  const read = (name: string, v: string) => {
    if (v.includes('-----BEGIN')) return Buffer.from(v)
    try {
      return readFileSync(v)
    } catch (err) {
      throw new Error(`${name}: cannot read ${v}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  return { cert: read('MAILCTL_SMTP_TLS_CERT', cert), key: read('MAILCTL_SMTP_TLS_KEY', key) }
}

/** An error an smtp-server callback turns into the reply `code message`. */
export function smtpReply(code: number, message: string): Error & { responseCode: number } {
  const err = new Error(message) as Error & { responseCode: number }
  err.responseCode = code
  return err
}
