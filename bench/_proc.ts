import type { Ctx } from '../src/deps'
import { createDomain, verifyDomain } from '../src/modules/domains/service'
import { splitTxt, type TestDns } from '../test/helpers/dns'

/** Helpers of the benches that drive child processes (send, campaign, workflows). */

export { freePort } from '../test/helpers/ports'

/** Reads JSON lines from a child's stdout, calling `on` for each. */
export function lines(stream: ReadableStream<Uint8Array>, on: (rec: Record<string, unknown>) => void) {
  const reader = stream.getReader()
  const dec = new TextDecoder()
  let buf = ''
  return (async () => {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buf += dec.decode(value, { stream: true })
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        try { on(JSON.parse(line) as Record<string, unknown>) } catch { /* not JSON */ }
      }
    }
  })()
}

/**
 * The benches' sending domain `bench-sender.test` for `ctx`'s project, its records published on the loopback
 * DNS server and verified (DKIM on for every message the bench sends).
 */
export async function verifiedBenchDomain(ctx: Ctx, dns: TestDns): Promise<void> {
  const domain = await createDomain(ctx, { projectId: ctx.projectId, domain: 'bench-sender.test' })
  for (const r of domain.records) {
    if (r.type === 'TXT') dns.add(r.name, { type: 'TXT', data: splitTxt(r.value) })
    else dns.add(r.name, { type: 'MX', exchange: r.value, priority: r.priority ?? 10 })
  }
  if (!(await verifyDomain(ctx, domain.id)).verified) throw new Error('bench domain did not verify')
}
