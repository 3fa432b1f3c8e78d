/**
 * Assembly of the outbound pipeline from the settings (MAILCTL_OUTBOUND, MAILCTL_MX_PORT,
 * MAILCTL_DNS_SERVERS, MAILCTL_HOSTNAME) and the wake-up path from "queued" to the pipeline.
 */
import { availableParallelism } from 'node:os'
import type { Config } from '../../config'
import type { Deps } from '../../deps'
import { resolverFor } from '../../dns'
import type { LinkDeps } from '../links'
import { inlineBuilder, SignerPool, type MessageBuilder } from '../signer'
import { CaptureTransport } from './capture'
import { OutboundPipeline, outboundWakeups, type PipelineOptions } from './deliver'
import { DirectTransport, type SmtpTransportOptions } from './direct'
import { mtaStsCa } from './mta-sts'
import { TlsResults } from '../tlsrpt/results'
import { errorFields } from '../../log'
import { SmartHostTransport, smartHostTarget } from './smarthost'
import type { DeliveryStore } from './store'
import type { Transport } from './types'

export { OutboundPipeline } from './deliver'

/** The transport MAILCTL_OUTBOUND names. */
export function createTransport(config: Config, opts: Partial<SmtpTransportOptions> = {}): Transport {
  const smtp: SmtpTransportOptions = { hostname: config.hostname, ...opts }
  if (config.outbound === 'capture') return new CaptureTransport()
  if (config.outbound === 'direct') {
    return new DirectTransport(resolverFor(config, { cache: true }), config.mxPort, {
      allowHosts: config.deliveryAllowHosts, dnsServers: config.dnsServers, mtaStsCa: mtaStsCa(config), ...smtp,
    })
  }
  return new SmartHostTransport(smartHostTarget(config.outbound), smtp)
}

export interface OutboundOptions extends Partial<Omit<PipelineOptions, 'store' | 'transport' | 'builder'>> {
  transport?: Transport
  /** Signer threads: default one per core; 0 builds on the main thread. */
  signerThreads?: number
  smtp?: Partial<SmtpTransportOptions>
}

/**
 * A pipeline with the configured transport and a signer pool (not started). `store` is what it reads and
 * records (store.ts): the composition root passes the emails module's (src/modules/emails/delivery.ts).
 */
export function createOutbound(deps: Deps, store: DeliveryStore, opts: OutboundOptions = {}): OutboundPipeline {
  const threads = opts.signerThreads ?? availableParallelism()
  // Plain data: a signer thread is posted it (campaign messages' links are signed where they are built).
  const links: LinkDeps = { secret: deps.secret, config: { publicUrl: deps.config.publicUrl } }
  const builder: MessageBuilder = threads > 0 ? new SignerPool(threads, undefined, deps.config.heapGrowthMb * 1024 * 1024, links) : inlineBuilder(links)
  const tlsResults = deps.config.tlsReports && deps.config.outbound === 'direct' && !opts.transport
    ? new TlsResults(deps.store, (err) => deps.log.warn('TLS results could not be written; kept for the next try', errorFields(err)))
    : undefined
  const smtp: Partial<SmtpTransportOptions> = { onWarning: (message, fields) => deps.log.warn(message, fields), ...(tlsResults ? { tlsResults } : {}), ...opts.smtp }
  return new OutboundPipeline(deps, { ...opts, store, transport: opts.transport ?? createTransport(deps.config, smtp), builder })
}

/**
 * Started by `serve` for the worker role: the delivery loop, and with Redis a subscription so that mail
 * queued on another node is picked up at once rather than at the next poll.
 */
export async function startOutbound(deps: Deps, store: DeliveryStore, opts: OutboundOptions = {}): Promise<{ pipeline: OutboundPipeline; stop(): Promise<void> }> {
  const pipeline = createOutbound(deps, store, { stopGraceMs: deps.config.shutdownGraceSeconds * 1000, ...opts })
  pipeline.start()
  const unsubscribe = deps.redis ? await outboundWakeups.subscribe(deps.redis, deps.log, () => pipeline.wake()) : null
  deps.log.info('outbound started', { transport: pipeline.transport.name, worker: pipeline.workerId })
  return {
    pipeline,
    async stop() {
      unsubscribe?.()
      await pipeline.stop()
    },
  }
}

/** Called after a transaction that queued mail commits: wakes local pipelines and, with Redis, the others. */
export function notifyQueued(deps: Deps): void {
  outboundWakeups.notify(deps)
}
