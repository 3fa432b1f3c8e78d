import type { Ctx } from '../../deps'
import { badRequest, conflict, flatError, notFound } from '../../errors'
import { checkTemplateSource } from '../../mail/render'
import { assertSenderAllowed } from '../domains/service'
import { checkDesign } from './design'
import { withPreheader } from './preheader'
import {
  DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, TEMPLATE_TYPES,
  type CreateTemplate, type ListTemplatesQuery, type Template, type TemplateList, type TemplateType, type TemplateUsage, type UpdateTemplate,
} from './model'
import * as repo from './repo'
import { templateUsage } from './usage'

/** A template's row, or null (a workflow's send step reads the template it names here). */
export { findById as findTemplateRow } from './repo'

/** Template verbs, shared by the HTTP routes, /v1/send, campaigns and workflows. */

function toTemplate(row: repo.TemplateRow): Template {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    subject: row.subject,
    body: row.body,
    design: row.design ?? null,
    preheader: row.preheader ?? null,
    from: row.fromEmail,
    fromName: row.fromName,
    replyTo: row.replyTo,
    type: row.type,
    projectId: row.projectId,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

const normEmail = (e: string) => e.trim().toLowerCase()

/**
 * POST /templates. Order of checks: `from` missing (flat 400), subject/body that do not compile (422),
 * sender domain not verified for the project (403).
 */
export async function createTemplate(ctx: Ctx, input: CreateTemplate): Promise<Template> {
  if (!input.from) throw flatError('from is required: the sender address of the template')
  const from = normEmail(input.from)
  const body = withPreheader(input.body, input.preheader)
  await checkTemplateSource({ subject: input.subject, body })
  await assertSenderAllowed(ctx, from)
  const now = ctx.deps.clock.date()
  const row: repo.TemplateRow = {
    id: Bun.randomUUIDv7(),
    projectId: ctx.projectId,
    name: input.name,
    description: input.description ?? null,
    subject: input.subject,
    body,
    design: checkDesign(input.design),
    preheader: input.preheader || null,
    fromEmail: from,
    fromName: input.fromName ?? null,
    replyTo: input.replyTo ? normEmail(input.replyTo) : null,
    type: input.type ?? 'MARKETING',
    createdAt: now,
    updatedAt: now,
  }
  await ctx.store.tx((db) => repo.insert(ctx.store, db, row))
  return toTemplate(row)
}

/** One template of the project, or 404 (also for another project's id). Used by /v1/send. */
export async function getTemplate(ctx: Ctx, id: string): Promise<Template> {
  const row = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  if (!row) throw notFound('template')
  return toTemplate(row)
}

const SORTS = new Set<repo.SortKey>(['createdAt', 'updatedAt', 'name'])

/**
 * GET /templates: offset pages. pageSize above MAX_PAGE_SIZE is clamped; an unknown sort falls back to
 * createdAt and an unknown dir to desc (docs/decisions.md, Lists and pages); an unknown type is a 400 (like an unknown status filter).
 */
export async function listTemplates(ctx: Ctx, q: ListTemplatesQuery): Promise<TemplateList> {
  if (q.type !== undefined && !(TEMPLATE_TYPES as readonly string[]).includes(q.type)) {
    throw badRequest(`Unknown template type "${q.type}": use TRANSACTIONAL, MARKETING or HEADLESS`)
  }
  const page = q.page ?? 1
  const pageSize = Math.min(q.pageSize ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
  const sort = SORTS.has(q.sort as repo.SortKey) ? (q.sort as repo.SortKey) : 'createdAt'
  const dir = q.dir === 'asc' ? 'asc' : 'desc'
  const search = q.search?.trim() || undefined
  const { rows, total } = await repo.list(ctx.store, ctx.store.db, ctx.projectId, {
    type: q.type as TemplateType | undefined, search, sort, dir, limit: pageSize, offset: (page - 1) * pageSize,
  })
  return { data: rows.map(toTemplate), page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
}

/**
 * PATCH /templates/:id. A changed subject or body must compile (422); a changed sender must be on a
 * verified domain (403). An unchanged sender is not re-checked, so renaming a template whose domain
 * has since lapsed still works (sending re-checks the domain anyway).
 */
export async function updateTemplate(ctx: Ctx, id: string, patch: UpdateTemplate): Promise<Template> {
  const existing = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  if (!existing) throw notFound('template')
  // The preheader lives in the body too: a new body or a new preheader makes the body again.
  const preheader = patch.preheader !== undefined ? patch.preheader || null : existing.preheader
  const body = patch.body !== undefined || patch.preheader !== undefined ? withPreheader(patch.body ?? existing.body, preheader) : undefined
  await checkTemplateSource({ subject: patch.subject, body })
  const set: Partial<repo.TemplateRow> = {}
  if (patch.name !== undefined) set.name = patch.name
  if (patch.description !== undefined) set.description = patch.description
  if (patch.subject !== undefined) set.subject = patch.subject
  if (body !== undefined && body !== existing.body) set.body = body
  if (patch.preheader !== undefined && preheader !== existing.preheader) set.preheader = preheader
  // A design describes its body: a body sent without one (an API client editing the HTML) leaves no design.
  if (patch.design !== undefined) set.design = checkDesign(patch.design)
  else if (patch.body !== undefined && body !== existing.body) set.design = null
  if (patch.fromName !== undefined) set.fromName = patch.fromName
  if (patch.replyTo !== undefined) set.replyTo = patch.replyTo === null ? null : normEmail(patch.replyTo)
  if (patch.type !== undefined) set.type = patch.type
  if (patch.from !== undefined) {
    const from = normEmail(patch.from)
    if (from !== existing.fromEmail) await assertSenderAllowed(ctx, from)
    set.fromEmail = from
  }
  if (!Object.keys(set).length) return toTemplate(existing)
  set.updatedAt = ctx.deps.clock.date()
  const row = await ctx.store.tx((db) => repo.update(ctx.store, db, ctx.projectId, id, set))
  if (!row) throw notFound('template')
  return toTemplate(row)
}

/**
 * DELETE /templates/:id. 409 while a workflow step sends the template or an unsent campaign was built
 * from it (the usage check and the delete run in one transaction).
 */
export async function deleteTemplate(ctx: Ctx, id: string): Promise<void> {
  await ctx.store.tx(async (db) => {
    const row = await repo.findById(ctx.store, db, ctx.projectId, id)
    if (!row) throw notFound('template')
    const usage = await templateUsage(ctx, id, db)
    if (usage.inUse) {
      throw conflict('The template is in use: remove it from these workflow steps and campaigns first', {
        campaigns: usage.campaigns, workflowSteps: usage.workflowSteps,
      })
    }
    await repo.remove(ctx.store, db, ctx.projectId, id)
  })
}

/** POST /templates/:id/duplicate: a copy named "<name> (copy)", returned whole (with its new id). */
export async function duplicateTemplate(ctx: Ctx, id: string): Promise<Template> {
  const src = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  if (!src) throw notFound('template')
  const now = ctx.deps.clock.date()
  const suffix = ' (copy)'
  const row: repo.TemplateRow = {
    ...src,
    id: Bun.randomUUIDv7(),
    name: src.name.length + suffix.length > 255 ? `${src.name.slice(0, 255 - suffix.length)}${suffix}` : `${src.name}${suffix}`,
    createdAt: now,
    updatedAt: now,
  }
  await ctx.store.tx((db) => repo.insert(ctx.store, db, row))
  return toTemplate(row)
}

/** GET /templates/:id/usage. */
export async function getTemplateUsage(ctx: Ctx, id: string): Promise<TemplateUsage> {
  const row = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  if (!row) throw notFound('template')
  return templateUsage(ctx, id, ctx.store.db)
}
