/** The header naming a request's repository on the /api/v1/... routes (docs/spec/decisions.md §2). */
export const REPOSITORY_HEADER = 'x-repository-id'

/** The path of a request's URL, without the query: sliced rather than parsed (hot path). */
export function requestPath(request: Request): string {
  const url = request.url
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const query = url.indexOf('?', start)
  return query === -1 ? url.slice(start) : url.slice(start, query)
}
