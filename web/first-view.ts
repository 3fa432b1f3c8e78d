/**
 * The server's first view of a page (src/http/dashboard-first-view.ts): on a slow network the contacts
 * page's first rows are drawn from the page's own HTML, before the scripts arrive. The app renders hidden
 * beside it (app.css) and takes its place as soon as it shows a page itself.
 */
export function releaseFirstView(): void {
  if (typeof document !== 'undefined') document.getElementById('first-view')?.remove()
}

/**
 * What the server needs to draw that view as the app draws it (the language, locale and time zone of
 * dates; the theme), kept in a cookie of the dashboard's pages. It holds no user data and no secret; a
 * wrong or missing one only makes the first view differ until the app takes over.
 */
export function rememberView(name: 'mailctl_view_lang' | 'mailctl_view_theme', value: string): void {
  try {
    // biome-ignore lint/suspicious/noDocumentCookie: written at once, before a reload that may follow (a language change); Cookie Store is asynchronous
    document.cookie = `${name}=${encodeURIComponent(value)}; path=/app; max-age=31536000; samesite=lax`
  } catch { /* no document (tests) or cookies refused: the view falls back to the browser's headers */ }
}
