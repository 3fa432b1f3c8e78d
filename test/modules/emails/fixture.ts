/**
 * The world of the sending tests: a real DNS server on loopback publishing the sender's DKIM key and the
 * recipients' MX records, real SMTP sinks those records point at, a project with a domain verified through
 * that DNS, and a delivery pipeline (inline signing) over the test env's store.
 */
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import type { TestEnv } from '../../helpers/env'
import { startTestDns, splitTxt, type TestDns } from '../../helpers/dns'
import { ctxFor } from '../../../src/deps'
import { createResolver } from '../../../src/dns'
import { createDomain, verifyDomain } from '../../../src/modules/domains/service'
import { createOutbound, type OutboundOptions } from '../../../src/mail/outbound'
import { createLogger } from '../../../src/log'
import type { OutboundPipeline } from '../../../src/mail/outbound/deliver'
import type { NewProject } from '../../../src/modules/projects/service'
import { deliveryStore } from '../../../src/modules/emails/delivery'

/** Publishes the domain's records in `dns` and verifies it; returns its id. */
export async function verifiedDomain(env: TestEnv, dns: TestDns, projectId: string, domain: string): Promise<string> {
  const ctx = ctxFor(env.deps, projectId, { kind: 'cli' })
  const d = await createDomain(ctx, { projectId, domain })
  for (const r of d.records) {
    if (r.type === 'TXT') dns.add(r.name, { type: 'TXT', data: splitTxt(r.value) })
    else dns.add(r.name, { type: 'MX', exchange: r.value, priority: r.priority ?? 10 })
  }
  const v = await verifyDomain(ctx, d.id)
  if (!v.verified) throw new Error(`domain ${domain} did not verify: ${JSON.stringify(v.records)}`)
  return d.id
}

/** Points `domain`'s MX at `host` with address `ip` (the sinks listen on MAILCTL_MX_PORT). */
export function mxTo(dns: TestDns, domain: string, ip = '127.0.0.1', host = `mx.${domain}`, priority = 10): void {
  dns.add(domain, { type: 'MX', exchange: host, priority })
  dns.set(host, [{ type: 'A', address: ip }])
}

/** DKIM verification of a received message against the key published in the test DNS. */
export async function dkimOf(raw: Buffer, dns: TestDns) {
  const resolver = createResolver({ servers: [dns.server] })
  const res = await dkimVerify(raw, {
    resolver: async (name: string, type: string) => {
      if (type !== 'TXT') throw Object.assign(new Error('unsupported'), { code: 'ENOTFOUND' })
      return (await resolver.resolveTxt(name)).map((v) => [v])
    },
  })
  return res.results
}

export function pipelineFor(env: TestEnv, opts: OutboundOptions = {}): OutboundPipeline {
  const p = createOutbound(env.deps, deliveryStore, { signerThreads: 0, pollMs: 50, throttleDelayMs: 100, ...(process.env.DEBUG_OUTBOUND ? { log: createLogger('debug') } : {}), ...opts })
  env.onStop(() => p.stop())
  return p
}

/** A project with `domain` verified (through the test DNS); `from` is an address on it. */
export async function projectWithDomain(env: TestEnv, dns: TestDns, domain: string): Promise<NewProject & { domain: string; domainId: string; from: string }> {
  const p = await env.project()
  const domainId = await verifiedDomain(env, dns, p.id, domain)
  return { ...p, domain, domainId, from: `hello@${domain}` }
}

export { startTestDns }
