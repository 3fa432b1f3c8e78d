import { S3Client } from 'bun'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type Config, parseS3Url, redactUrl, type S3Location } from '../../config'
import { AppError } from '../../errors'

/**
 * Where uploaded images live: files under <data dir>/uploads, or objects in the S3-compatible bucket of
 * MAILCTL_S3_URL (Bun's built-in S3 client, signed with AWS Signature V4). Both keep an image under its
 * unguessable name (the bucket under `<prefix><name>`); the HTTP route serves either the same way.
 */
export interface UploadStorage {
  readonly kind: 'dir' | 's3'
  /** Human-readable place, without secrets. */
  readonly where: string
  put(name: string, bytes: Uint8Array, contentType: string): Promise<void>
  /** The image's bytes as a stream, or null when there is no such object. The first bytes are already read, so a failing store is an error here, not a broken answer. */
  open(name: string): Promise<ReadableStream<Uint8Array> | null>
}

/** The bucket answered with an error or could not be reached: 502, in the standard envelope. */
export function storageUnavailable(action: string, err: unknown): AppError {
  const code = (err as { code?: unknown } | null)?.code
  return new AppError('BAD_GATEWAY', `The upload storage (S3 bucket) could not ${action}: ${typeof code === 'string' ? code : 'no answer'}`, {
    suggestion: 'Check MAILCTL_S3_URL and that the bucket is reachable from this server (`mailctl doctor`).',
  })
}

function dirStorage(dir: string): UploadStorage {
  return {
    kind: 'dir',
    where: dir,
    async put(name, bytes) {
      await mkdir(dir, { recursive: true })
      const tmp = join(dir, `.${name}.tmp`)
      await writeFile(tmp, bytes, { mode: 0o644 })
      await rename(tmp, join(dir, name))
    },
    async open(name) {
      let file: Buffer
      try { file = await readFile(join(dir, name)) } catch { return null }
      return new Blob([new Uint8Array(file)]).stream()
    },
  }
}

/** A stream that yields `first` and then the rest of `reader`. */
function resumed(first: Uint8Array | undefined, reader: ReadableStreamDefaultReader<Uint8Array>): ReadableStream<Uint8Array> {
  let pending = first
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (pending) {
        controller.enqueue(pending)
        pending = undefined
        return
      }
      const { done, value } = await reader.read()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    cancel(reason) { return reader.cancel(reason) },
  })
}

export function s3Storage(loc: S3Location): UploadStorage {
  const client = new S3Client({ accessKeyId: loc.accessKeyId, secretAccessKey: loc.secretAccessKey, endpoint: loc.endpoint, bucket: loc.bucket, region: loc.region })
  return {
    kind: 's3',
    where: `bucket ${loc.bucket} at ${loc.endpoint}${loc.prefix ? ` (keys under ${loc.prefix})` : ''}`,
    async put(name, bytes, contentType) {
      try {
        await client.write(loc.prefix + name, bytes, { type: contentType })
      } catch (err) {
        throw storageUnavailable('store the image', err)
      }
    },
    async open(name) {
      const reader = client.file(loc.prefix + name).stream().getReader()
      try {
        // Reading the first chunk makes the request: a missing object or an unreachable bucket shows here.
        const { done, value } = await reader.read()
        return resumed(done ? undefined : value, reader)
      } catch (err) {
        if ((err as { code?: unknown }).code === 'NoSuchKey') return null
        throw storageUnavailable('read the image', err)
      }
    },
  }
}

// A cache, not state: the uploads' storage client (a directory or an S3 client), stateless, made from the settings.
const cache = new WeakMap<Config, UploadStorage>()

/** The storage of this configuration (one S3 client per configuration). */
export function storageFor(config: Config): UploadStorage {
  let s = cache.get(config)
  if (!s) {
    s = config.s3Url ? s3Storage(parseS3Url(config.s3Url)) : dirStorage(join(config.dataDir, 'uploads'))
    cache.set(config, s)
  }
  return s
}

/** For `mailctl doctor`: the bucket answers (a HEAD of a key that need not exist), without secrets in the message. */
export async function probeBucket(config: Config): Promise<string | null> {
  if (!config.s3Url) return null
  const loc = parseS3Url(config.s3Url)
  const client = new S3Client({ accessKeyId: loc.accessKeyId, secretAccessKey: loc.secretAccessKey, endpoint: loc.endpoint, bucket: loc.bucket, region: loc.region })
  try {
    await client.exists(`${loc.prefix}.mailctl-doctor`)
    return null
  } catch (err) {
    const code = (err as { code?: unknown }).code
    return `${redactUrl(config.s3Url)}: ${typeof code === 'string' ? code : String(err)}`
  }
}
