import type { TestEnv } from '../../helpers/env'
import { insertTestDomain } from '../../helpers/domains'

/** A domain row written directly (the DNS-driven verification is the domains module's own test). */
export async function addDomain(env: TestEnv, projectId: string, domain: string, verified: boolean): Promise<string> {
  return (await insertTestDomain(env, projectId, domain, { verified })).id
}

export const campaignBody = (over: Record<string, unknown> = {}) => ({
  name: 'Spring sale', description: 'Everything 20% off', subject: 'Hello {{firstName}}', body: '<p>Hi {{firstName}}, code {{code}}</p>',
  from: 'news@example.com', fromName: 'Example', replyTo: 'support@example.com', audienceType: 'ALL', ...over,
})
