// A fresh request id per request, for the X-Request-Id header and the log line. Ids offered by
// clients are not adopted: they could be forged to confuse log correlation, and reading them
// makes Bun build the Headers object of every request (20% of a cheap request in profiles).
// The id rides on the Request under a symbol (a WeakMap keyed by short-lived requests is GC work).
const REQUEST_ID = Symbol('kgs.requestId')

type Tagged = Request & { [REQUEST_ID]?: string }

export function assignRequestId(request: Request): string {
  const id = crypto.randomUUID()
  ;(request as Tagged)[REQUEST_ID] = id
  return id
}

export function requestIdOf(request: Request): string | undefined {
  return (request as Tagged)[REQUEST_ID]
}
