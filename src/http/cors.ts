// CORS (docs/spec/decisions.md §5a): browser-based clients (the MCP Inspector, web agents) read the
// metadata documents, register, get, refresh and revoke tokens, and call the API from their own
// origin. All of that is credentialed by the Authorization header or the form body, never by a
// cookie, so any origin may call it: the answer allows `*` and never credentials. The
// authorization pages are the exception: they carry the pages' cookies and are for a
// top-level browser window only, so they answer no cross-origin request, preflight or not.
import { requestPath } from './path.ts'

const PAGES = '/api/v1/oauth/authorize'
const METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE'
/** How long a browser may cache a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600

function openToOtherOrigins(request: Request): boolean {
  if (!request.headers.has('origin')) return false
  const path = requestPath(request)
  return path !== PAGES && !path.startsWith(`${PAGES}/`)
}

/** The answer to a CORS preflight (OPTIONS with Access-Control-Request-Method), or undefined. */
export function preflightResponse(request: Request): Response | undefined {
  if (
    request.method !== 'OPTIONS' ||
    !request.headers.has('access-control-request-method') ||
    !openToOtherOrigins(request)
  )
    return undefined
  const headers = new Headers({
    'access-control-allow-origin': '*',
    'access-control-allow-methods': METHODS,
    'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
  })
  // Echoed: a wildcard would not cover Authorization (Fetch standard), which every API call needs.
  const requested = request.headers.get('access-control-request-headers')
  if (requested) headers.set('access-control-allow-headers', requested)
  return new Response(null, { status: 204, headers })
}

/** Lets a cross-origin caller read the response, its headers (WWW-Authenticate, Retry-After, Link...) included. */
export function allowOtherOrigins(request: Request, headers: Headers): void {
  if (!openToOtherOrigins(request)) return
  headers.set('access-control-allow-origin', '*')
  headers.set('access-control-expose-headers', '*')
}
