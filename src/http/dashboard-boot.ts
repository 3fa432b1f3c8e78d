import { type TSchema, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { Ctx, Deps } from '../deps'
import { sessionUser } from '../modules/auth/sessions'
import { ContactList } from '../modules/contacts/model'
import { listContacts } from '../modules/contacts/service'
import { ProjectOut } from '../modules/projects/model'
import { listMyProjects, projectForMember } from '../modules/projects/service'
import { UserOut } from '../modules/users/model'
import { getMe } from '../modules/users/service'
import { sessionToken } from './auth'
import { CONTACTS_PAGE_PATH, CONTACTS_PAGE_SIZE } from '../../web/nav'

/**
 * What the dashboard asks first, written into its page (docs/decisions.md, The dashboard's first
 * load): for a signed-in user, the answers of GET /users/@me and GET /users/@me/projects and, on the
 * contacts page, of its first page of contacts (GET /contacts?limit=50&total=false). On a slow network each
 * of those is a round trip after the scripts; inlined, the first rows need none. The answers are the
 * routes' own (the same service verbs, cut to the same response schemas), for the session's user only: no
 * session, an ended one, or a project the user is not a member of inlines nothing (the app then asks the
 * API as before, which answers 401 or 404). The page that carries them is never stored by a cache.
 */
export interface Boot {
  me: UserOut
  projects: ProjectOut[]
  /** The first page of the contacts list (no search, no filter, no count), with its project. */
  contacts?: { projectId: string; page: typeof ContactList.static }
}

/** The element id of the data block; web/main.tsx reads it. */
export const BOOT_ID = 'mailctl-boot'


const Projects = Type.Array(ProjectOut)

/** JSON as the route would answer it: dates as strings, only the fields its response schema declares. */
function asAnswered<T>(schema: TSchema, value: unknown): T {
  return Value.Clean(schema, JSON.parse(JSON.stringify(value))) as T
}

/** The boot data of a request for the page at `path`, or null (not signed in, or anything failed). */
export async function bootFor(deps: Deps, request: Request, path: string): Promise<Boot | null> {
  try {
    const token = sessionToken(request)
    const userId = token ? await sessionUser(deps, token) : null
    if (!userId) return null
    const [me, projects] = await Promise.all([getMe(deps, userId), listMyProjects(deps, userId)])
    const boot: Boot = { me: asAnswered(UserOut, me), projects: asAnswered(Projects, projects) }
    const opened = CONTACTS_PAGE_PATH.exec(path)
    const projectId = opened ? safeDecode(opened[1]) : null
    if (projectId && projects.some((p) => p.id === projectId)) {
      const { project } = await projectForMember(deps, userId, projectId, 'read')
      const ctx: Ctx = { deps, store: deps.store, projectId: project.id, actor: { kind: 'user', userId }, now: deps.clock.date() }
      const page = await listContacts(ctx, { limit: CONTACTS_PAGE_SIZE, total: false })
      boot.contacts = { projectId: project.id, page: asAnswered(ContactList, page) }
    }
    return boot
  } catch {
    // The page never fails for its data: the app asks the API, which answers with the error.
    return null
  }
}

function safeDecode(s: string): string | null {
  try { return decodeURIComponent(s) } catch { return null }
}

/**
 * The data block for the page: `<script type="application/json">` is data, not a script (the CSP's
 * `script-src 'self'` still holds: nothing inline runs). Inside it the HTML parser ends the element at the
 * first `</script`, and `<!--` changes how it looks for that end, so every `<`, `>` and `&` is written as
 * a JSON escape (`\u003c`...); JSON.parse reads them back as the same characters. U+2028 and U+2029 are
 * escaped too, for any reader that takes the text for JavaScript.
 */
export function bootBlock(boot: Boot): string {
  const json = JSON.stringify(boot).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  return `<script type="application/json" id="${BOOT_ID}">${json}</script>`
}
