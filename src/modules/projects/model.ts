import { t } from 'elysia'
import { RoleName } from '../members/model'

export const ProjectName = t.String({ minLength: 1, maxLength: 100, error: 'name must be 1 to 100 characters' })

export const CreateProjectBody = t.Object({ name: ProjectName })
export type CreateProjectBody = typeof CreateProjectBody.static

export const UpdateProjectBody = t.Object({
  name: t.Optional(ProjectName),
  trackingEnabled: t.Optional(t.Boolean({ description: 'Open and click tracking for mail of this project' })),
  sendRatePerSecond: t.Optional(t.Union([t.Integer({ minimum: 1, maximum: 1_000_000 }), t.Null()], {
    error: 'sendRatePerSecond must be an integer from 1 to 1000000, or null',
    description: 'Campaign mail of this project goes out at most this many messages per second (transactional and workflow mail is not held back); null: the server default (MAILCTL_SEND_RATE_PER_SECOND, unset: no cap)',
  })),
  defaultFrom: t.Optional(t.Union([t.String({ format: 'email', maxLength: 320 }), t.Null()], {
    error: 'defaultFrom must be an email address on a verified domain of the project, or null',
    description: 'The sender the dashboard fills in for a new template or campaign; its domain must be verified for the project. null clears it',
  })),
  defaultFromName: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 200 }), t.Null()], {
    error: 'defaultFromName must be 1 to 200 characters, or null',
    description: 'The sender name filled in with defaultFrom; null clears it',
  })),
  defaultReplyTo: t.Optional(t.Union([t.String({ format: 'email', maxLength: 320 }), t.Null()], {
    error: 'defaultReplyTo must be an email address, or null',
    description: 'The reply-to address filled in for a new template or campaign; null clears it',
  })),
})
export type UpdateProjectBody = typeof UpdateProjectBody.static

export const ProjectParams = t.Object({ id: t.String({ description: 'Project id' }) })

const projectFields = {
  id: t.String(),
  name: t.String(),
  publicKey: t.String({ description: 'pk_ key: only for POST /v1/track (safe to embed in a web page)' }),
  disabled: t.Boolean({ description: 'A disabled project answers 403 PROJECT_DISABLED to API keys' }),
  trackingEnabled: t.Boolean(),
  sendRatePerSecond: t.Union([t.Integer(), t.Null()], { description: 'The project\'s own campaign sending rate (messages per second); null: the server default' }),
  defaultFrom: t.Union([t.String(), t.Null()], { description: 'The sender filled in for new templates and campaigns' }),
  defaultFromName: t.Union([t.String(), t.Null()]),
  defaultReplyTo: t.Union([t.String(), t.Null()]),
  role: RoleName,
  createdAt: t.Date(),
  updatedAt: t.Date(),
}

export const ProjectOut = t.Object(projectFields, { description: 'A project as its members see it; the secret key is never shown again after creation or regeneration' })
export type ProjectOut = typeof ProjectOut.static

export const ProjectWithSecret = t.Object({
  ...projectFields,
  secretKey: t.String({ description: 'sk_ key, shown only in this response: store it now' }),
}, { description: 'A project with its new secret key (creation and regenerate-keys only)' })
export type ProjectWithSecret = typeof ProjectWithSecret.static

export const SetupState = t.Object({
  projectId: t.String(),
  steps: t.Array(t.Object({ id: t.String(), title: t.String(), done: t.Boolean() })),
  completed: t.Boolean({ description: 'Every step is done' }),
}, { description: 'Onboarding checklist: each step is done once the project has the matching data' })
export type SetupState = typeof SetupState.static
