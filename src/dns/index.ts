/** DNS look-ups for every module (delivery MX, /v1/verify, domain verification). See resolver.ts. */
export {
  createResolver, resolverFor, resolveMx, resolveTxt, parseServer,
  DnsError, isDnsError, isNotFound,
  type MxAnswer, type Resolver,
} from './resolver'
