import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import * as service from './service'

const tags = ['segments']

/** Trims the emails of member bodies before validation (docs/decisions.md, Requests: emails are trimmed and lower-cased). */
function trimEmails({ body }: { body: unknown }) {
  if (!body || typeof body !== 'object' || !Array.isArray((body as { emails?: unknown }).emails)) return
  const b = body as { emails: unknown[] }
  b.emails = b.emails.map((e) => (typeof e === 'string' ? e.trim() : e))
}

export function segmentsRoutes(deps: Deps) {
  return new Elysia({ prefix: '/segments' })
    .use(authPlugin(deps))
    .onTransform(trimEmails)
    .post('', async ({ ctx, body, set }) => {
      const seg = await service.createSegment(ctx, body)
      set.status = 201
      return seg
    }, {
      apiKey: 'secret', body: m.CreateSegmentBody, response: { 201: m.Segment, 400: m.ErrorBody },
      detail: {
        tags, summary: 'Create a segment',
        description: `201 with the segment (memberCount counted now). \`type\` defaults to DYNAMIC, which requires \`condition\` as an object: otherwise 400 \`{error}\`. STATIC segments accept and ignore a condition; their members are managed with POST/DELETE /segments/:id/members. \`trackMembership: true\` emits segment.<slug>.entry / .exit events as contacts join and leave (the first compute is queued at once). ${m.CONDITION_DOC}`,
      },
    })
    .get('', ({ ctx }) => service.listSegments(ctx), {
      apiKey: 'secret', response: { 200: t.Array(m.Segment) },
      detail: { tags, summary: 'List segments', description: 'Every segment of the project, newest first; a bare array, no pagination.' },
    })
    .post('/preview', ({ ctx, body }) => service.previewSegment(ctx, body), {
      apiKey: 'secret', body: m.PreviewBody, response: { 200: m.PreviewResult, 400: m.ErrorBody },
      detail: {
        tags, summary: 'Count the contacts a condition matches, without saving anything',
        description: `Read-only: the live count of a filter tree while it is edited (the dashboard's segment builder). \`condition\` is validated as on POST /segments: 400 \`{error}\` when it is not an object, 422 VALIDATION_ERROR with the path of each bad part (\`condition.groups.0.filters.1.value\`). \`segmentId\` names the segment being edited (404 when it is not one of the project's), so that a reference back to it is refused as a cycle. ${m.CONDITION_DOC}`,
      },
    })
    .get('/:id', ({ ctx, params }) => service.getSegment(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.Segment },
      detail: { tags, summary: 'Get a segment with its cached memberCount' },
    })
    .patch('/:id', ({ ctx, params, body }) => service.updateSegment(ctx, params.id, body), {
      apiKey: 'secret', params: m.IdParams, body: m.UpdateSegmentBody, response: { 200: m.Segment, 400: m.ErrorBody },
      detail: {
        tags, summary: 'Update a segment',
        description: 'name, description, condition (DYNAMIC only: a condition that is not an object answers 400 `{error}`; STATIC segments ignore it) and trackMembership. The type and slug never change. Turning trackMembership off drops the membership rows; turning it on (or changing the condition of a tracked segment) queues a compute.',
      },
    })
    .delete('/:id', async ({ ctx, params, set }) => {
      await service.deleteSegment(ctx, params.id)
      set.status = 204
    }, {
      apiKey: 'secret', params: m.IdParams,
      detail: { tags, summary: 'Delete a segment', description: '204 with an empty body. 409 CONFLICT (details.usedBy) while an active campaign or another segment\'s condition uses it.' },
    })
    .get('/:id/contacts', ({ ctx, params, query }) => service.segmentContacts(ctx, params.id, query), {
      apiKey: 'secret', params: m.IdParams, query: m.ContactsQuery, response: { 200: m.ContactsPage },
      detail: { tags, summary: 'List the members of a segment (page-based)', description: 'Newest contacts first; `page` from 1, `pageSize` 1-100 (default 20, larger values clamped). DYNAMIC segments are evaluated live; STATIC segments list their members.' },
    })
    .post('/:id/members', ({ ctx, params, body }) => service.addMembers(ctx, params.id, body), {
      apiKey: 'secret', params: m.IdParams, body: m.AddMembersBody, response: { 200: m.AddMembersResult },
      detail: { tags, summary: 'Add contacts to a STATIC segment by email', description: 'At most 1,000 emails. Emails that are not contacts are reported in `notFound`, or created with `createMissing: true` (subscribed as `subscribed`, default true). 400 for a DYNAMIC segment; 409 when other requests deleted a contact it creates or adds while it was written, or the write deadlocked with theirs, three times over (send it again). One transaction: all or nothing.' },
    })
    .delete('/:id/members', ({ ctx, params, body }) => service.removeMembers(ctx, params.id, body), {
      apiKey: 'secret', params: m.IdParams, body: m.RemoveMembersBody, response: { 200: m.RemoveMembersResult },
      detail: { tags, summary: 'Remove contacts from a STATIC segment by email', description: 'At most 1,000 emails; 400 for a DYNAMIC segment.' },
    })
    .post('/:id/compute', ({ ctx, params }) => service.computeSegment(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.ComputeResult },
      detail: { tags, summary: 'Recompute the membership of a tracked DYNAMIC segment', description: 'Writes the membership rows and emits one segment.<slug>.entry per contact that joined and one segment.<slug>.exit per contact that left; nothing when nothing changed. 400 for STATIC or untracked segments (use /refresh). Also done every 5 minutes and soon after events that can change the segment.' },
    })
    .post('/:id/refresh', ({ ctx, params }) => service.refreshSegment(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.RefreshResult },
      detail: { tags, summary: 'Refresh the cached memberCount', description: 'Counts the members now; writes no membership rows and emits no events.' },
    })
}
