/**
 * Worker thread of parseInbound (analyze.ts): classifies and reads one large inbound message off the
 * main thread, answers once and is terminated. It is also an entry point of `bun build --compile`
 * (package.json "build"), so it exists inside the compiled executable.
 */
import { setPriority } from 'node:os'
import { analyzeInbound } from './analyze'

declare const self: Worker

/** Parsing mail from strangers yields the CPU to the main thread (HTTP, SMTP, commits) when both want it. */
const PARSE_NICE = 10

if (process.platform === 'linux') {
  try { setPriority(0, PARSE_NICE) } catch { /* not permitted: same priority as the main thread */ }
}

self.onmessage = (event: MessageEvent<Uint8Array>) => {
  self.postMessage(analyzeInbound(event.data))
}
