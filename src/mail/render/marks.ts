/**
 * The characters that stand for Handlebars constructs and pending line breaks while the text alternative
 * is derived from a template source (text.ts) by the HTML conversion in its marked mode (html-to-text.ts).
 * They are control and private-use characters: a source holding one is converted per render instead, and
 * values never carry one (variables.ts removes them).
 */

/** Private-use characters around the index of a Handlebars construct while the HTML is converted. */
export const MARK_OUTPUT = ['\uE000', '\uE001'] as const
/** A construct that outputs nothing itself (block tags, else, comments): it must not move line breaks. */
export const MARK_SILENT = ['\uE002', '\uE003'] as const
/** Text made only of silent marks and whitespace. */
export const SILENT_ONLY = /^\s*(?:\uE002\d+\uE003\s*)+$/
/** The index of a construct between its marks: `gaps[index]` is the construct's source text. */
export const MARK_RE = /[\uE000\uE002](\d+)[\uE001\uE003]/g

/** A pending line break and paragraph break: settled by foldBreaks once the blocks around them have rendered. */
export const LINE_BREAK = '\u0001'
export const PARAGRAPH_BREAK = '\u0002'
/** <br>: adds a line. (A literal newline in a text template would trigger Handlebars' standalone-tag stripping.) */
export const HARD_BREAK = '\u0003'
/** Around a " [url]" link suffix whose URL is a variable: dropped at render time when the URL is empty. */
export const LINK_OPEN = '\uE004'
export const LINK_CLOSE = '\uE005'

/** Every mark character, the ones above: stripped from values, refused in sources. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0001-U+0003 are the break marks defined above
export const MARK_CHARS = /[\u0001-\u0003\uE000-\uE005]/
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0001-U+0003 are the break marks defined above
export const MARK_CHARS_G = /[\u0001-\u0003\uE000-\uE005]/g
