/**
 * The import rules' checker (scripts/check-boundaries.ts, run by .ci/run): each rule refuses what it names
 * and lets the allowed imports through, every kind of import statement is seen, and the baseline's lines
 * must give a reason.
 */
import { describe, expect, test } from 'bun:test'
import { baseline, check, specifiers, violations } from '../../scripts/check-boundaries'

describe('the rules, on repository-relative paths', () => {
  test('drizzle: a service or a transport may not import it; a repo, src/db and src/jobs may', () => {
    expect(check('src/modules/contacts/service.ts', 'drizzle-orm')).toEqual(['drizzle'])
    expect(check('src/http/app.ts', 'drizzle-orm/sqlite-core')).toEqual(['drizzle'])
    expect(check('src/modules/contacts/repo.ts', 'drizzle-orm')).toEqual([])
    expect(check('src/modules/auth/oauth-repo.ts', 'drizzle-orm')).toEqual([])
    expect(check('src/modules/contacts/repo/rows.ts', 'drizzle-orm')).toEqual([])
    expect(check('src/db/client.ts', 'drizzle-orm')).toEqual([])
    expect(check('src/jobs/queue.ts', 'drizzle-orm')).toEqual([])
    expect(check('test/modules/contacts/search.test.ts', 'drizzle-orm')).toEqual([])
  })

  test('modules: another module only through its service.ts or index.ts; inside a module anything goes', () => {
    expect(check('src/modules/campaigns/service.ts', 'src/modules/contacts/repo.ts')).toEqual(['modules'])
    expect(check('src/modules/campaigns/jobs.ts', 'src/modules/events/stream.ts')).toEqual(['modules'])
    expect(check('src/modules/campaigns/service.ts', 'src/modules/contacts/service.ts')).toEqual([])
    expect(check('src/modules/campaigns/service.ts', 'src/modules/contacts/index.ts')).toEqual([])
    expect(check('src/modules/campaigns/service.ts', 'src/modules/campaigns/repo.ts')).toEqual([])
    expect(check('src/http/app.ts', 'src/modules/contacts/routes.ts')).toEqual([])
  })

  test('mail: src/mail imports nothing from src/modules, not even a service', () => {
    expect(check('src/mail/outbound/deliver.ts', 'src/modules/domains/service.ts')).toEqual(['mail'])
    expect(check('src/mail/outbound/deliver.ts', 'src/db/client.ts')).toEqual([])
  })

  test('web: the dashboard imports nothing from src/', () => {
    expect(check('web/pages/contacts/list.tsx', 'src/modules/contacts/model.ts')).toEqual(['web'])
    expect(check('web/pages/contacts/list.tsx', 'web/api.ts')).toEqual([])
    expect(check('web/api.ts', 'react')).toEqual([])
  })
})

test('every kind of import is seen: named, type-only, re-export, side-effect, dynamic, over several lines; not comments', () => {
  const text = [
    "import { a } from './a'",
    "import type { B } from '../b'",
    "export { c } from './c'",
    "export * from './d'",
    "import './e'",
    "const f = await import('./f')",
    'import {',
    '  g,',
    "} from './g'",
    "// import { h } from './h'",
    "/* import { i } from './i' */",
  ].join('\n')
  expect(specifiers(text).sort()).toEqual(['../b', './a', './c', './d', './e', './f', './g'])
})

test('the baseline: one "rule file target  # reason" a line; a line without a reason or of an unknown rule is refused', () => {
  const b = baseline('# a comment\n\ndrizzle src/a.ts drizzle-orm  # SQL to move into a repo\n')
  expect([...b.entries()]).toEqual([['drizzle src/a.ts drizzle-orm', 'SQL to move into a repo']])
  expect(() => baseline('drizzle src/a.ts drizzle-orm\n')).toThrow('gives no reason')
  expect(() => baseline('layers src/a.ts src/b.ts  # why\n')).toThrow('cannot read')
})

test('the tree as it is: every violation is in scripts/boundaries-baseline.txt (what .ci/run checks)', async () => {
  const allowed = baseline(await Bun.file(`${import.meta.dir}/../../scripts/boundaries-baseline.txt`).text())
  const fresh = violations().filter((v) => !allowed.has(`${v.rule} ${v.file} ${v.target}`))
  expect(fresh).toEqual([])
})
