import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import { CreateDomainBody, DomainOut, DomainParams, ProjectDomainsParams, UpdateDomainBody } from './model'
import * as service from './service'

const detail = (summary: string, description: string) => ({ tags: ['domains'], summary, description, security: [{ secretKey: [] }] })

/** /domains: sending domains with their DKIM key and DNS records. Secret key only. */
export function domainsRoutes(deps: Deps) {
  return new Elysia({ prefix: '/domains' }).use(authPlugin(deps))
    .get('/project/:projectId', ({ ctx, params }) => service.listDomains(ctx, params.projectId), {
      apiKey: 'secret', params: ProjectDomainsParams, response: { 200: t.Array(DomainOut) },
      detail: detail('List domains', 'Verified and pending domains of the project, by name, each with its records and their last-checked status. Another project id answers 404.'),
    })
    .post('', async ({ ctx, body, set }) => {
      const out = await service.createDomain(ctx, body)
      set.status = 201
      return out
    }, {
      apiKey: 'secret', body: CreateDomainBody, response: { 201: DomainOut },
      detail: detail('Add a sending domain', 'Creates an RSA-2048 DKIM key (the private key stays encrypted on the server) and returns the DNS records to publish: DKIM TXT (required), the return-path MX and SPF TXT on bounce.<domain> and a DMARC TXT (recommended). 422 for an invalid name or an IP address; 409 when the project already has the domain or another project has verified it; 404 when projectId is not the key\'s project.'),
    })
    .get('/:id/verify', ({ ctx, params }) => service.verifyDomain(ctx, params.id), {
      apiKey: 'secret', params: DomainParams, response: { 200: DomainOut },
      detail: detail('Check the DNS records now', 'Looks every record up (through MAILCTL_DNS_SERVERS when set) and returns the domain with each record\'s status and, when not verified, the reason (missing, or the value found). The domain becomes verified when its DKIM record matches the key exactly. The same check runs in the background every 5 minutes for pending domains and daily for verified ones.'),
    })
    .patch('/:id', ({ ctx, params, body }) => service.updateDomain(ctx, params.id, body), {
      apiKey: 'admin', params: DomainParams, body: UpdateDomainBody, response: { 200: DomainOut },
      detail: { ...detail('Change a domain\'s settings', 'allowSubdomains: whether senders at subdomains of this domain may send (off by default). OWNER or ADMIN in the dashboard (a MEMBER gets 403). Another project\'s domain answers 404.') },
    })
    .delete('/:id', async ({ ctx, params, set }) => {
      await service.deleteDomain(ctx, params.id)
      set.status = 204
    }, {
      apiKey: 'secret', params: DomainParams,
      detail: detail('Remove a domain', 'Deletes the domain and its DKIM key; mail from it is refused from now on. 204 with an empty body.'),
    })
}
