// What a segment of the app's own paths may be: an id, a UUID or a slug (a-z, 0-9, hyphens), as
// the API's rows have them. Anything else (an encoded slash, a dot segment, a space) routes
// nowhere: a crafted link can never carry a path into an API request the page makes.
const SLUG = /^[a-z0-9-]+$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const isId = (segment: string) => SLUG.test(segment) || UUID.test(segment)

/** The segments of an app path after /app, or undefined when one of them is not an id. */
export function routeSegments(pathname: string): string[] | undefined {
  const segments = pathname.split('/').filter(Boolean).slice(1)
  return segments.every(isId) ? segments : undefined
}

/** `href` resolved against the page, if it is a URL at all. */
function resolve(href: string): URL | undefined {
  try {
    return new URL(href, location.href)
  } catch {
    return undefined
  }
}

/** Whether `href` leads to a page of the app (this origin, /app or under it), whether or not its path routes. */
export function leadsIntoApp(href: string): boolean {
  const url = resolve(href)
  return (
    url !== undefined && url.origin === location.origin && (url.pathname === '/app' || url.pathname.startsWith('/app/'))
  )
}

/** `href` as a path to navigate to within the app, if it leads into it and its every segment routes. */
export function appHref(href: string): string | undefined {
  const url = resolve(href)
  if (!url || !leadsIntoApp(href) || !routeSegments(url.pathname)) return undefined
  return url.pathname + url.search + url.hash
}
