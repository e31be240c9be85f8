// Elysia answers an unmatched method like an unknown path. We tell them apart: a path that
// exists under other methods gets 405 with an Allow header (RFC 9110 §15.5.6).
import { errorResponse } from './errors.ts'
import { requestPath } from './path.ts'

interface RouteInfo {
  method: string
  path: string
}

function patternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) =>
      segment === '*' ? '.*' : segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/')
  return new RegExp(`^${source}/?$`)
}

export function methodNotAllowedResponder(routes: readonly RouteInfo[]) {
  const patterns = routes
    .filter((r) => r.method !== 'ALL')
    .map((r) => ({ method: r.method.toUpperCase(), pattern: patternOf(r.path) }))
  return (request: Request): Response | undefined => {
    const path = requestPath(request)
    const allowed = new Set(patterns.filter((p) => p.pattern.test(path)).map((p) => p.method))
    if (allowed.size === 0) return undefined
    if (allowed.has('GET')) allowed.add('HEAD')
    return errorResponse(405, `method ${request.method} not allowed on ${path}`, {
      allow: [...allowed].sort().join(', '),
    })
  }
}
