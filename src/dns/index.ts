/** DNS look-ups for every module (delivery MX, /v1/verify, domain verification). See resolver.ts. */
export {
  createResolver, resolverFor, resolveMx, resolveTxt, resolveA, resolveAAAA, parseServer, systemServers,
  DnsError, isDnsError, isNotFound,
  type DnsErrorCode, type MxAnswer, type MxRecord, type Resolver, type ResolverOptions,
} from './resolver'
