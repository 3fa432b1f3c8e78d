import { createHash } from 'node:crypto'
import type { FileHandle } from 'node:fs/promises'

/**
 * The archive container of `mailctl backup`: a POSIX ustar file, written and read here by hand (a few
 * dozen lines; `tar -tvf` lists it and `tar -xf` unpacks it). Sizes past ustar's 8 GiB octal field use
 * the GNU base-256 form. Only regular files are written or accepted.
 */

const BLOCK = 512
const CHUNK = 1 << 20

function octal(buf: Buffer, offset: number, length: number, value: number): void {
  buf.write(value.toString(8).padStart(length - 1, '0'), offset, length - 1, 'ascii')
  buf[offset + length - 1] = 0
}

function header(name: string, size: number, mtime: Date): Buffer {
  const h = Buffer.alloc(BLOCK)
  const bytes = Buffer.from(name, 'utf8')
  if (bytes.length > 100) throw new Error(`archive entry name too long: ${name}`)
  bytes.copy(h, 0)
  octal(h, 100, 8, 0o600)
  octal(h, 108, 8, 0)
  octal(h, 116, 8, 0)
  if (size < 8 ** 11) octal(h, 124, 12, size)
  else {
    // GNU base-256: high bit of the first byte set, the size big-endian in the rest.
    h[124] = 0x80
    let v = BigInt(size)
    for (let i = 135; i > 124; i--) { h[i] = Number(v & 0xffn); v >>= 8n }
  }
  octal(h, 136, 12, Math.floor(mtime.getTime() / 1000))
  h.fill(0x20, 148, 156)
  h[156] = 0x30 // '0': a regular file
  h.write('ustar\u000000', 257, 8, 'ascii')
  let sum = 0
  for (const b of h) sum += b
  h.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8, 'ascii')
  return h
}

export interface TarEntryInfo { path: string; size: number; sha256: string }

/** Appends entries to an open file; `finish` writes the two zero blocks that end a tar file. */
export class TarWriter {
  written = 0
  constructor(private fh: FileHandle) {}

  private async write(buf: Buffer): Promise<void> {
    let off = 0
    while (off < buf.length) {
      const { bytesWritten } = await this.fh.write(buf, off, buf.length - off)
      off += bytesWritten
    }
    this.written += buf.length
  }

  /** Adds the file at `source` as `name`; answers its size and SHA-256. */
  async addFile(name: string, source: FileHandle, onBytes?: (n: number) => void): Promise<TarEntryInfo> {
    const { size, mtime } = await source.stat()
    await this.write(header(name, size, mtime))
    const hash = createHash('sha256')
    const buf = Buffer.allocUnsafe(CHUNK)
    let left = size
    let pos = 0
    while (left > 0) {
      const { bytesRead } = await source.read(buf, 0, Math.min(CHUNK, left), pos)
      if (bytesRead === 0) throw new Error(`${name} shrank while it was archived`)
      const part = buf.subarray(0, bytesRead)
      hash.update(part)
      await this.write(part)
      left -= bytesRead
      pos += bytesRead
      onBytes?.(bytesRead)
    }
    const pad = (BLOCK - (size % BLOCK)) % BLOCK
    if (pad) await this.write(Buffer.alloc(pad))
    return { path: name, size, sha256: hash.digest('hex') }
  }

  async addBuffer(name: string, data: Buffer): Promise<TarEntryInfo> {
    await this.write(header(name, data.length, new Date()))
    await this.write(data)
    const pad = (BLOCK - (data.length % BLOCK)) % BLOCK
    if (pad) await this.write(Buffer.alloc(pad))
    return { path: name, size: data.length, sha256: createHash('sha256').update(data).digest('hex') }
  }

  async finish(): Promise<void> {
    await this.write(Buffer.alloc(BLOCK * 2))
  }
}

/** The archive is not a complete, well-formed mailctl archive. */
export class ArchiveError extends Error {}

function parseSize(h: Buffer): number {
  if (h[124] & 0x80) {
    let v = 0n
    for (let i = 125; i < 136; i++) v = (v << 8n) | BigInt(h[i])
    return Number(v)
  }
  const text = h.toString('ascii', 124, 136).replace(/[\0 ]+$/g, '').trim()
  if (!/^[0-7]+$/.test(text)) throw new ArchiveError('bad entry size in a tar header')
  return Number.parseInt(text, 8)
}

function checkHeader(h: Buffer): void {
  const stored = Number.parseInt(h.toString('ascii', 148, 156).replace(/[\0 ]+/g, ''), 8)
  let sum = 0
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]
  if (stored !== sum) throw new ArchiveError('a tar header is damaged (checksum mismatch)')
}

/**
 * Reads the archive from start to end and hands each entry's bytes to `onEntry`'s sink in chunks. Throws
 * ArchiveError when the file ends early, a header is damaged, or an entry is not a regular file.
 */
export async function readTar(fh: FileHandle, onEntry: (name: string, size: number) => Promise<{ data(chunk: Buffer): Promise<void> | void; end(): Promise<void> | void }>): Promise<void> {
  const { size: total } = await fh.stat()
  let pos = 0
  const h = Buffer.alloc(BLOCK)
  const buf = Buffer.allocUnsafe(CHUNK)
  const readExactly = async (target: Buffer, length: number) => {
    let got = 0
    while (got < length) {
      const { bytesRead } = await fh.read(target, got, length - got, pos)
      if (bytesRead === 0) throw new ArchiveError(`the archive is truncated (ends at byte ${pos} of an entry)`)
      got += bytesRead
      pos += bytesRead
    }
  }
  for (;;) {
    if (pos + BLOCK > total) throw new ArchiveError('the archive is truncated (no end-of-archive blocks)')
    await readExactly(h, BLOCK)
    if (h.every((b) => b === 0)) {
      if (pos + BLOCK > total) throw new ArchiveError('the archive is truncated (one end-of-archive block of two)')
      await readExactly(h, BLOCK)
      if (!h.every((b) => b === 0)) throw new ArchiveError('data after an end-of-archive block')
      return
    }
    checkHeader(h)
    const type = String.fromCharCode(h[156])
    if (type !== '0' && type !== '\0') throw new ArchiveError(`unexpected tar entry type "${type}"`)
    const nameEnd = h.indexOf(0, 0)
    const name = h.toString('utf8', 0, nameEnd < 0 || nameEnd > 100 ? 100 : nameEnd)
    const size = parseSize(h)
    const sink = await onEntry(name, size)
    let left = size
    while (left > 0) {
      const n = Math.min(CHUNK, left)
      await readExactly(buf, n)
      await sink.data(buf.subarray(0, n))
      left -= n
    }
    await sink.end()
    const pad = (BLOCK - (size % BLOCK)) % BLOCK
    if (pad) {
      if (pos + pad > total) throw new ArchiveError('the archive is truncated (in the padding of an entry)')
      pos += pad
    }
  }
}

/** SHA-256 of a byte stream, for sinks. */
export function hasher() {
  const h = createHash('sha256')
  return { update: (b: Buffer) => h.update(b), hex: () => h.digest('hex') }
}
