// One declaration, two addresses (docs/spec/decisions.md §2): a repository-scoped route set is
// served at /{repoID}/… and at /api/v1/… with the repository in the X-Repository-ID header. The
// OpenAPI document lists each operation once, at /{repoID}/…, and says there that the header
// form exists (so Swagger UI does not show every operation twice).
import { Elysia, t, type AnyElysia } from 'elysia'
import type { TProperties } from '@sinclair/typebox'
import { servedAlsoWithRepositoryHeader } from '../http/openapi.ts'
import type { repositoryScope } from './scope.ts'

type Scope = ReturnType<typeof repositoryScope>

const IN_PATH = '/:repoID'
const IN_HEADER = '/api/v1'
const repoID = { repoID: t.String({ description: 'repository UUID or slug' }) }

/** What a route declaration needs to know of the address it is mounted at. */
function address(prefix: typeof IN_PATH | typeof IN_HEADER) {
  const inPath = prefix === IN_PATH
  return {
    prefix,
    /** The path parameters: `properties`, with repoID where the path names the repository. */
    params: <P extends TProperties>(properties: P) => t.Object({ ...(inPath ? repoID : {}), ...properties }),
    /** A route with no path parameter of its own: none at all under /api/v1 (Elysia would validate an absent object). */
    repositoryParams: inPath ? t.Object(repoID) : undefined,
    /** The operation's `detail`: the header form stays out of the document; the path form names it. */
    detail: <D extends object>(detail: D) =>
      inPath ? { ...detail, ...servedAlsoWithRepositoryHeader() } : { ...detail, hide: true as const },
  }
}

export type RepositoryAddress = ReturnType<typeof address>

const mount = (name: string, prefix: RepositoryAddress['prefix'], scope: Scope) =>
  new Elysia({ name, seed: prefix, prefix }).use(scope)

/**
 * `build` declares the routes once on the app it is given (mounted at `at.prefix`, with the
 * repository scope's macros); they are served at both addresses.
 */
export function repositoryScopedRoutes<R extends AnyElysia>(
  name: string,
  scope: Scope,
  build: (app: ReturnType<typeof mount>, at: RepositoryAddress) => R,
) {
  // Typed as a plain plugin: nothing needs the route types, and two copies of them make the
  // application's type too complex for the compiler.
  const routes: AnyElysia = new Elysia({ name })
  routes.use(build(mount(`${name}-at`, IN_PATH, scope), address(IN_PATH)))
  routes.use(build(mount(`${name}-at`, IN_HEADER, scope), address(IN_HEADER)))
  return routes
}
