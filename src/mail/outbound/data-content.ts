/**
 * A message as SMTP DATA content (RFC 5321 4.5.2), apart from the client session so that the signer threads
 * (src/mail/signer-worker.ts) make it where they build the message without loading the session's sockets.
 */

/**
 * DATA content made where the message was built (a signer thread, src/mail/signer.ts), by `dataContent`
 * itself: the message is its start, so the two share one buffer and the main thread neither scans nor
 * copies the message again. Keyed by the message's Buffer: a copy of it simply is not found.
 * A cache, not state: a miss makes the same content from the message.
 */
const preparedData = new WeakMap<Buffer, Buffer>()

/**
 * The message of `data`, its first `length` bytes, with `data` recorded as its DATA content. `data` must be
 * `dataContent` of those bytes.
 */
export function messageOfData(data: Buffer, length: number): Buffer {
  const raw = data.subarray(0, length)
  preparedData.set(raw, data)
  return raw
}

/**
 * The message as DATA content: line ends made CRLF (a bare CR or LF becomes CRLF), a dot starting a line
 * doubled, and the terminating "." line appended, in one buffer. Native searches decide whether the
 * per-byte pass is needed at all (composed messages have CRLF line ends throughout).
 */
export function dataContent(raw: Buffer): Buffer {
  const prepared = preparedData.get(raw)
  if (prepared) return prepared
  let clean = raw[0] !== 0x2e && raw.indexOf('\n.') < 0
  if (clean) {
    for (let i = raw.indexOf(0x0a); i >= 0; i = raw.indexOf(0x0a, i + 1)) {
      if (i === 0 || raw[i - 1] !== 0x0d) { clean = false; break }
    }
  }
  if (clean) {
    for (let i = raw.indexOf(0x0d); i >= 0; i = raw.indexOf(0x0d, i + 1)) {
      if (raw[i + 1] !== 0x0a) { clean = false; break }
    }
  }
  const last = raw.length ? raw[raw.length - 1] : -1
  if (clean) {
    const tail = last === 0x0a ? '.\r\n' : '\r\n.\r\n'
    return Buffer.concat([raw, Buffer.from(tail, 'latin1')])
  }
  // The rules of nodemailer's DataStream, byte by byte.
  const out = Buffer.allocUnsafe(raw.length * 2 + 5)
  let o = 0
  let prev = -1
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]
    if (prev === 0x0d && c !== 0x0a) {
      // A bare CR becomes CRLF; a dot after it starts a line.
      out[o++] = 0x0a
      if (c === 0x2e) out[o++] = 0x2e
    } else if (c === 0x0a && prev !== 0x0d) {
      out[o++] = 0x0d
    } else if (c === 0x2e && (prev === 0x0a || prev === -1)) {
      out[o++] = 0x2e
    }
    out[o++] = c
    prev = c
  }
  const tail = prev === 0x0a ? '.\r\n' : prev === 0x0d ? '\n.\r\n' : '\r\n.\r\n'
  o += out.write(tail, o, 'latin1')
  return out.subarray(0, o)
}
