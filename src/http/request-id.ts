// A request id per request: the caller's X-Request-Id when it is a sane token (so ids can be
// followed across services), otherwise a fresh UUID. Kept beside the Request, not in a header
// we would have to copy.
const ids = new WeakMap<Request, string>()
const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/

export function assignRequestId(request: Request): string {
  const offered = request.headers.get('x-request-id')
  const id = offered && ACCEPTABLE.test(offered) ? offered : crypto.randomUUID()
  ids.set(request, id)
  return id
}

export function requestIdOf(request: Request): string | undefined {
  return ids.get(request)
}
