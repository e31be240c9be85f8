// What every route refuses in its URL before a schema or a handler sees it:
// - a path parameter that is not valid percent-encoded UTF-8 (/%FF/jobs), which the router
//   hands over as null;
// - an encoded NUL (%00) anywhere in the path or the query: PostgreSQL text cannot hold one,
//   and a query given one fails.
import { Elysia } from 'elysia'
import { HttpError } from './errors.ts'

export const urlChecks = new Elysia({ name: 'kgs/url-checks' }).onTransform({ as: 'global' }, ({ request, params }) => {
  for (const name in params) {
    if ((params as Record<string, string | null>)[name] === null)
      throw new HttpError(400, `invalid path parameter: ${name}: not valid percent-encoded UTF-8`)
  }
  if (request.url.includes('%00'))
    throw new HttpError(400, 'the URL contains an encoded NUL character (%00), which no parameter accepts')
})
