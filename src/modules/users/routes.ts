import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import { UserOut } from './model'
import * as service from './service'

/** GET /users/@me (dashboard session). The /users/@me/projects routes live in the projects module. */
export function usersRoutes(deps: Deps) {
  return new Elysia({ prefix: '/users' }).use(authPlugin(deps))
    .get('/@me', ({ userId }) => service.getMe(deps, userId), {
      session: true, response: { 200: UserOut },
      detail: { tags: ['users'], summary: 'The signed-in user', security: [{ session: [] }] },
    })
}
