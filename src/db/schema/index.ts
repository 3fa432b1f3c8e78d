import { pgCols, sqliteCols, type Cols } from '../columns'
import { coreTables } from './core'
import { accountTables } from './accounts'
import { domainTables } from './domains'
import { contactTables } from './contacts'
import { sendingTables } from './sending'
import { segmentTables } from './segments'
import { templateTables } from './templates'
import { inboundTables } from './inbound'
import { secretTables } from './secrets'
import { nodeTables } from './nodes'
import { campaignTables } from './campaigns'
import { hookTables } from './hooks'
import { outboxTables } from './outbox'
import { workflowTables } from './workflows'
import { analyticsTables } from './analytics'
import { billingTables } from './billing'
import { oauthTables } from './oauth'
import { tlsrptTables } from './tlsrpt'

/** Every table of mailctl, built from one definition per table for the given store. */
export function buildSchema(c: Cols) {
  return {
    ...coreTables(c),
    ...accountTables(c),
    ...domainTables(c),
    ...contactTables(c),
    ...sendingTables(c),
    ...segmentTables(c),
    ...templateTables(c),
    ...inboundTables(c),
    ...secretTables(c),
    ...nodeTables(c),
    ...campaignTables(c),
    ...hookTables(c),
    ...outboxTables(c),
    ...workflowTables(c),
    ...analyticsTables(c),
    ...billingTables(c),
    ...oauthTables(c),
    ...tlsrptTables(c),
  }
}

/** The reference (PostgreSQL-typed) schema: repositories import table objects through `store.t`, typed as this. */
export type Schema = ReturnType<typeof buildSchema>
export const pgSchema: Schema = buildSchema(pgCols)
export const sqliteSchema: Schema = buildSchema(sqliteCols)
