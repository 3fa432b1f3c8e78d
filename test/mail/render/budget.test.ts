import { afterAll, describe, expect, test } from 'bun:test'
import {
  clearRenderCache, closeRenderPool, htmlToText, RENDER_MAX_OUTPUT, renderEmail, RenderLimitError, renderMessage, renderRefusal,
  SUBJECT_MAX_OUTPUT, validateTemplateSource,
} from '../../../src/mail/render'
import { checkMarkdownDepth } from '../../../src/mail/render/markdown'
import { renderPool } from '../../../src/mail/render/pool'
import { AppError } from '../../../src/errors'

/**
 * Issue 35 item 1: every render has a budget of work and of output, Markdown a bound on nesting, and a
 * heavy render runs in a render thread with a deadline. The hostile inputs of the issue, each answered
 * within its budget (the per-test timeout is the only clock: before the budgets they took seconds to
 * minutes, or overflowed the stack).
 */

const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))
const EACH3 = '<p>{{#each @root.a}}{{#each @root.a}}{{#each @root.a}}x{{/each}}{{/each}}{{/each}}</p>'

/** The limit a render was refused for, or 'ok'. */
async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p
    return 'ok'
  } catch (err) {
    if (err instanceof RenderLimitError) return `${err.part}:${err.limit}`
    throw err
  }
}

afterAll(() => closeRenderPool())

describe('render budgets', () => {
  test('three nested {{#each @root.a}} over 200 keys: refused for work, inline and in a render thread', async () => {
    expect(() => renderEmail({ subject: 's', body: EACH3 }, { a: keys(200) })).toThrow(RenderLimitError)
    expect(await outcome(renderMessage({ subject: 's', body: EACH3 }, { a: keys(200) }))).toBe('body:work')
    // Within the budget the same template renders as before.
    expect((await renderMessage({ subject: 's', body: EACH3 }, { a: keys(3) })).html).toBe(`<p>${'x'.repeat(27)}</p>`)
  }, 5_000)

  test('an {{#each}} whose output passes the output budget is refused while it accumulates', async () => {
    const big = 'y'.repeat(60_000)
    expect(await outcome(renderMessage({ subject: 's', body: '{{#each a}}{{{@root.big}}}{{/each}}' }, { a: Array(100).fill(0), big }))).toBe('body:output')
    // 30 copies of a 60,000-character value: under the budget.
    const ok = await renderMessage({ subject: 's', body: '{{#each a}}{{{@root.big}}}{{/each}}' }, { a: Array(30).fill(0), big })
    expect(ok.html.length).toBe(30 * 60_000)
    expect(ok.html.length).toBeLessThan(RENDER_MAX_OUTPUT)
  }, 5_000)

  test('a template without blocks: a value repeated past the output budget is refused (inline, no thread)', () => {
    const body = '{{{v}}}'.repeat(40)
    expect(() => renderEmail({ subject: 's', body }, { v: 'z'.repeat(60_000) })).toThrow(/longer than 2,000,000 characters/)
  })

  test('subjects: no {{#each}} (a 422 at save), and at most SUBJECT_MAX_OUTPUT characters', () => {
    let err: unknown
    try { validateTemplateSource({ subject: '{{#each a}}x{{/each}}', body: 'b' }) } catch (e) { err = e }
    expect(err).toBeInstanceOf(AppError)
    expect((err as AppError).opts.errors).toEqual([expect.objectContaining({ field: 'subject', code: 'invalid_template' })])
    expect((err as AppError).message).toContain('{{#each}} is not allowed in a subject')
    let limit: unknown
    try { renderEmail({ subject: '{{v}}{{v}}', body: 'b' }, { v: 'w'.repeat(SUBJECT_MAX_OUTPUT / 2 + 1) }) } catch (e) { limit = e }
    expect(limit).toBeInstanceOf(RenderLimitError)
    expect((limit as RenderLimitError).part).toBe('subject')
  })

  test('the refusal is the 422 of API.md: VALIDATION_ERROR, field and a code naming the limit', () => {
    const err = new RenderLimitError('work', 'rendering needs more than 200,000 steps')
    err.part = 'body'
    const refusal = renderRefusal(err) as AppError
    expect(refusal).toBeInstanceOf(AppError)
    expect(refusal.status).toBe(422)
    expect(refusal.code).toBe('VALIDATION_ERROR')
    expect(refusal.opts.errors).toEqual([{ field: 'body', code: 'render_work_limit', message: 'body: rendering needs more than 200,000 steps' }])
  })
})

describe('Markdown bodies on hostile input', () => {
  test('"> " x 200,000: refused for depth before the parser sees it (it overflowed its stack)', async () => {
    expect(await outcome(renderMessage({ subject: 's', body: '> '.repeat(200_000), format: 'markdown' }, {}))).toBe('body:depth')
    expect(() => checkMarkdownDepth(`${'- '.repeat(40)}x`)).toThrow(/deeper than 32 levels/)
    expect(() => checkMarkdownDepth(`${'1. > '.repeat(17)}x`)).toThrow(RenderLimitError)
    // Ordinary nesting and code passes.
    checkMarkdownDepth('> quote\n> > nested\n\n- a\n  - b\n    - c\n\n1. one\n2. two\n\n    code\n')
  }, 10_000)

  test('"_a" x 300,000: stopped at the deadline in a render thread, which is replaced', async () => {
    clearRenderCache()
    const pool = renderPool()
    const before = pool.timeouts
    expect(await outcome(renderMessage({ subject: 's', body: '_a'.repeat(300_000), format: 'markdown' }, {}))).toBe('body:time')
    expect(pool.timeouts).toBe(before + 1)
    // The next Markdown render gets a fresh thread.
    const ok = await renderMessage({ subject: 's', body: '# Hi {{name}}\n\n1. one\n2. two', format: 'markdown' }, { name: 'Ann' })
    expect(ok.html).toContain('<h1>Hi Ann</h1>')
    expect(ok.text).toBe('Hi Ann\n\n1. one\n2. two')
    // The deadline counts the render thread's CPU time, at most 20 s of wall-clock time on a busy machine.
  }, 30_000)

  test('"[" x 16,000: within its budget (refused or rendered), never an error of another kind', async () => {
    const r = await outcome(renderMessage({ subject: 's', body: `${'['.repeat(16_000)}a${']'.repeat(16_000)}`, format: 'markdown' }, {}))
    expect(['ok', 'body:time', 'body:depth']).toContain(r)
  }, 30_000)
})

describe('html-to-text of a body at the output budget', () => {
  test('stays linear', () => {
    expect(htmlToText(`<ol>${'<li>a</li>'.repeat(100_000)}</ol>`).split('\n').length).toBe(100_000)
  }, 10_000)
})
