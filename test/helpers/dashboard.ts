/** Fetches the dashboard page at `path` and every script and stylesheet it names, as a browser would. */
export async function loadDashboard(base: string, path = '/app/') {
  const page = await fetch(`${base}${path}`)
  const html = await page.text()
  const assets: Array<{ url: string; status: number; type: string | null; bytes: number }> = []
  for (const m of html.matchAll(/<(?:script|link)[^>]+(?:src|href)="([^"]+)"/g)) {
    const url = new URL(m[1], `${base}${path}`).href
    const res = await fetch(url)
    assets.push({ url, status: res.status, type: res.headers.get('content-type'), bytes: (await res.arrayBuffer()).byteLength })
  }
  return { status: page.status, type: page.headers.get('content-type'), html, assets }
}
