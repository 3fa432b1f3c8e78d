import { t } from 'elysia'

export const Email = t.String({ format: 'email', maxLength: 254, error: 'Invalid email', examples: ['ada@example.com'] })
export const Password = t.String({ minLength: 8, maxLength: 256, description: '8 to 256 characters', error: 'Password must be 8 to 256 characters' })

export const NewUser = t.Object({
  email: Email,
  password: Password,
  name: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
})
export type NewUser = typeof NewUser.static

export const UserOut = t.Object({
  id: t.String(),
  email: t.String(),
  name: t.Union([t.String(), t.Null()]),
  emailVerified: t.Boolean(),
  createdAt: t.Date(),
}, { description: 'A dashboard user (never includes the password hash)' })
export type UserOut = typeof UserOut.static
