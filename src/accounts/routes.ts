// /api/v1/auth/* and /api/v1/users/*: schema, auth, call into Accounts.
import { Elysia, t } from 'elysia'
import type { accessControl } from '../http/access.ts'
import type { Throttles } from '../http/throttle.ts'
import { pagination } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { Accounts } from './accounts.ts'
import { PASSWORD_MAX } from './passwords.ts'
import { normalizeEmail } from './users.ts'
import { Email, Invitation, Name, Password, Session, SessionGrant, User } from './schemas.ts'

const TokenPair = t.Object({ token: t.String(), refresh_token: t.String() })
const UserParams = t.Object({ userID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) })
const SessionParams = t.Object({ sessionID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) })
const strict = { additionalProperties: false } as const

/** Answers that carry tokens are never stored by a cache (as RFC 6749 §5.1 asks of the OAuth token endpoint). */
function uncached<T>(set: { headers: Record<string, unknown> }, tokens: T): T {
  set.headers['cache-control'] = 'no-store'
  return tokens
}
// The error answers each route can give (the OpenAPI document lists exactly these).
/** A JSON body: invalid (400), too large (413), of another type (415). */
const bodyErrors = { 400: ErrorBody, 413: ErrorBody, 415: ErrorBody }
/** Password hashing: a sign-in or registration refused while the hashing queue is full (503), or throttled (429). */
const hashingErrors = { 429: ErrorBody, 503: ErrorBody }
const unauthenticated = { 401: ErrorBody }

export interface AccountRoutesOptions {
  accounts: Accounts
  access: ReturnType<typeof accessControl>
  throttles: Throttles
}

export function accountRoutes({ accounts, access, throttles }: AccountRoutesOptions) {
  /** The user a /users/{userID} route names: 404 when there is none. */
  const named = async (params: Record<string, string>) => (await accounts.getUser(params.userID!.toLowerCase())).id
  return (
    new Elysia({ name: 'kgs/accounts', prefix: '/api/v1' })
      .use(access)
      .use(pagination)
      .post(
        '/auth/register',
        async ({ body, set, request }) => {
          const grant = await throttles.register.guard(request, undefined, () => accounts.register(body))
          set.status = 201
          return uncached(set, grant)
        },
        {
          public: true,
          body: t.Object(
            { email: Email, password: Password, name: t.Optional(Name), invitation: t.Optional(Invitation) },
            strict,
          ),
          // 403: REGISTRATION is closed, or invite and no open invitation for this e-mail came with it.
          response: { 201: SessionGrant, ...bodyErrors, 403: ErrorBody, 409: ErrorBody, ...hashingErrors },
          detail: {
            tags: ['accounts'],
            summary:
              'Create an account and start a session, as REGISTRATION allows (open; invite: with an invitation code; closed: 403)',
          },
        },
      )
      .post(
        '/auth/login',
        async ({ body, set, request }) =>
          uncached(set, await throttles.login.guard(request, normalizeEmail(body.email), () => accounts.login(body))),
        {
          public: true,
          body: t.Object(
            { email: t.String({ maxLength: 254 }), password: t.String({ maxLength: PASSWORD_MAX }) },
            strict,
          ),
          response: { 200: SessionGrant, ...bodyErrors, ...unauthenticated, ...hashingErrors },
          detail: { tags: ['accounts'], summary: 'Start a session' },
        },
      )
      .post(
        '/auth/refresh',
        async ({ body, set, request }) =>
          uncached(set, await throttles.token.guard(request, undefined, () => accounts.refresh(body.refresh_token))),
        {
          public: true,
          body: t.Object({ refresh_token: t.String({ maxLength: 128 }) }, strict),
          response: { 200: TokenPair, ...bodyErrors, ...unauthenticated, 429: ErrorBody },
          detail: { tags: ['accounts'], summary: 'Exchange a refresh token (single use) for a new token pair' },
        },
      )
      .get(
        '/auth/sessions',
        async ({ principal, page }) =>
          (await accounts.listSessions(principal.userId, page.limit, page.after)).map((session) => ({
            ...session,
            current: session.id === principal.sessionId,
          })),
        {
          session: 'sessions',
          paginated: true,
          response: { 200: t.Array(Session), 400: ErrorBody, ...unauthenticated, 403: ErrorBody },
          detail: {
            tags: ['accounts'],
            summary: "The caller's live sessions, oldest first (paginated; a session token only)",
          },
        },
      )
      .delete(
        '/auth/sessions/:sessionID',
        async ({ principal, params }) => {
          const session = await accounts.endSession(principal.userId, params.sessionID.toLowerCase())
          return { ...session, current: session.id === principal.sessionId }
        },
        {
          session: 'sessions',
          params: SessionParams,
          response: { 200: Session, 400: ErrorBody, ...unauthenticated, 403: ErrorBody, 404: ErrorBody },
          detail: {
            tags: ['accounts'],
            summary: "End one of the caller's sessions: its tokens stop working at once (a session token only)",
          },
        },
      )
      .post(
        '/auth/logout',
        async ({ principal }) => {
          await accounts.logout(principal)
          return { message: 'logged out' }
        },
        {
          auth: true,
          response: { 200: t.Object({ message: t.String() }), 400: ErrorBody, ...unauthenticated },
          detail: { tags: ['accounts'], summary: 'End the current session: its tokens stop working at once' },
        },
      )
      .get('/users/me', ({ principal }) => accounts.getUser(principal.userId), {
        auth: true,
        response: { 200: User, ...unauthenticated },
        detail: { tags: ['accounts'], summary: 'The authenticated user' },
      })
      .get('/users/:userID', ({ params }) => accounts.getUser(params.userID.toLowerCase()), {
        self: { or: 'user:read', scope: 'read', user: named },
        params: UserParams,
        response: { 200: User, 400: ErrorBody, ...unauthenticated, 403: ErrorBody, 404: ErrorBody },
        detail: { tags: ['accounts'], summary: 'A user (self, or with user:read)' },
      })
      // A current_password is a guess at a password: it draws on the sign-in budgets of the acting user.
      .put(
        '/users/:userID',
        ({ principal, params, body, request }) => {
          const update = () => accounts.updateUser(principal, params.userID.toLowerCase(), body)
          return body.current_password === undefined
            ? update()
            : throttles.login.guard(request, principal.userId, update)
        },
        {
          self: { or: 'user:manage', scope: 'write', user: named },
          params: UserParams,
          body: t.Object(
            {
              name: t.Optional(Name),
              email: t.Optional(Email),
              current_password: t.Optional(
                t.String({
                  maxLength: PASSWORD_MAX,
                  description: "the acting user's password: required to change the e-mail (with a session token only)",
                }),
              ),
            },
            strict,
          ),
          response: {
            200: User,
            ...bodyErrors,
            ...unauthenticated,
            403: ErrorBody,
            404: ErrorBody,
            409: ErrorBody,
            429: ErrorBody,
          },
          detail: {
            tags: ['accounts'],
            summary:
              'Update a profile (self, or with user:manage); changing the e-mail needs a session token and current_password',
          },
        },
      )
  )
}
