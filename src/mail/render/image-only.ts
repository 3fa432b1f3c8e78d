/**
 * SpamAssassin's HTML_IMAGE_ONLY_04 ... _32 rules fire when an HTML part has an `<img>` and its raw source
 * (markup and text alike) is at most 3,200 characters, in 400-character bands whose scores go up and
 * down with the band and differ between score sets (without network tests and Bayes, the set `-L`
 * uses: 1.7, 0.6, 1.4, 2.0, 2.1, 2.8, 2.8, 2.2; with both, the usual set of a production filter: 1.2,
 * 1.7, 2.1, 1.1, 1.5, 1.6, 1.4, 0.0). Whatever mailctl adds to such HTML (the unsubscribe footer, the
 * open pixel, click-tracking URLs longer than their targets) moves it to another band, higher or lower
 * by chance. Only past 3,200 characters does it add nothing under every score set: so HTML with images
 * that mailctl has added to and that is still that short gets blank space, which no client renders.
 * HTML without images is left as it is (the pixel is then no image: tracking.ts).
 * (docs/adr/0017-open-pixel-as-background.md, docs/decisions.md "The open pixel".)
 */

/** The bound of the last band: a source longer than this is in none. */
export const IMAGE_ONLY_MAX_CHARS = 3200

/**
 * `html` (HTML that mailctl has added to) with the blank space that takes it past IMAGE_ONLY_MAX_CHARS,
 * before its last `</body>` (`bodyClose`, -1 when it has none: at the end), when it has an `<img>` and is
 * that short; else as it is. Counted in code points (a supplementary character is one), as a filter that
 * decodes the part counts; a filter that counts bytes sees at least as many.
 */
export function pastImageOnlyBands(html: string, bodyClose: number): string {
  if (html.length > IMAGE_ONLY_MAX_CHARS * 2 || !/<img[\s/>]/i.test(html)) return html
  const pairs = /[\ud800-\udbff][\udc00-\udfff]/.test(html) ? (html.match(/[\ud800-\udbff][\udc00-\udfff]/g) ?? []).length : 0
  const chars = html.length - pairs
  if (chars > IMAGE_ONLY_MAX_CHARS) return html
  // Spaces, not line breaks: SpamAssassin merges a run of more than 20 blank lines into 20 before it
  // measures the part.
  const blank = ' '.repeat(IMAGE_ONLY_MAX_CHARS + 1 - chars)
  return bodyClose >= 0 ? html.slice(0, bodyClose) + blank + html.slice(bodyClose) : html + blank
}
