// The sign-in pages of the OAuth 2.1 authorization server (HTML, for the person): the
// authorization request, the sign-in form and the consent decision. The protocol endpoints that
// clients call are protocol-routes.ts; which page a request gets next is page-flow.ts.
import { Elysia, t } from 'elysia'
import type { Sql } from 'postgres'
import type { Accounts } from '../accounts/accounts.ts'
import { HashingBusyError, PASSWORD_MAX, PASSWORD_MIN } from '../accounts/passwords.ts'
import { normalizeEmail } from '../accounts/users.ts'
import { ConflictError } from '../db/conflict.ts'
import { publicAccess } from '../http/access.ts'
import { HttpError } from '../http/errors.ts'
import type { Throttles } from '../http/throttle.ts'
import { beginAuthorization, redirectWith } from './authorize.ts'
import type { ClientMetadataDocuments } from './client-metadata.ts'
import {
  bindingCookie,
  bindUser,
  browserBinding,
  browserBindingDigest,
  browserSessionUser,
  newBrowserBinding,
  decide,
  endBrowserSession,
  endedSessionCookie,
  issueCode,
  narrowScope,
} from './consent.ts'
import { authorizationPages, expiredPage, redirect303, retryAfter } from './page-flow.ts'
import { CLOSED_REGISTRATION_TEXT, errorPage, pageResponse } from './pages.ts'

const FormField = (maxLength: number) => t.String({ maxLength })
/**
 * Whether a form of these pages asks only for a page: without e-mail and password, the sign-in or
 * sign-up form itself (the other page's button); with one of them alone, 400 naming the other.
 */
function asksForPage(body: { email?: string; password?: string }): boolean {
  if (body.email === undefined && body.password === undefined) return true
  if (body.email === undefined || body.password === undefined)
    throw new HttpError(
      400,
      `invalid body: ${body.email === undefined ? 'email' : 'password'}: required with ${body.email === undefined ? 'password' : 'email'}`,
    )
  return false
}

export interface OAuthPageRoutesOptions {
  system: Sql
  baseUrl: string
  accounts: Accounts
  throttles: Throttles
  clients: ClientMetadataDocuments
}

export function oauthPageRoutes({ system, baseUrl, accounts, throttles, clients }: OAuthPageRoutesOptions) {
  const { secureCookies, postedPending, signInAgain, signUpAgain, signedIn, firstPage } = authorizationPages({
    system,
    baseUrl,
    accounts,
  })

  // The authorization pages answer HTML (and redirects), not JSON.
  const htmlPage = (summary: string, redirect?: 302 | 303) => ({
    tags: ['oauth'],
    summary,
    responses: {
      200: { description: 'an HTML page', content: { 'text/html': {} } },
      ...(redirect && { [redirect]: { description: 'back to the client' } }),
      400: { description: 'an HTML error page', content: { 'text/html': {} } },
    },
  })
  return new Elysia({ name: 'kgs/oauth-pages' })
    .use(publicAccess)
    .get(
      '/api/v1/oauth/authorize',
      async ({ request }) => {
        // Every request may insert a pending authorization: anonymous rows, budgeted like registrations.
        const admission = throttles.authorize.admit(request, undefined)
        if (admission.refused) {
          const wait = admission.retryAfterSeconds
          return retryAfter(
            pageResponse(
              errorPage(`Too many authorization requests from your address. Try again in ${wait} seconds.`),
              429,
            ),
            wait,
          )
        }
        const cookies = request.headers.get('cookie')
        const knownBrowser = browserBinding(cookies)
        const binding = knownBrowser ?? newBrowserBinding()
        const outcome = await beginAuthorization(
          system,
          baseUrl,
          new URL(request.url).searchParams,
          browserBindingDigest(binding),
          (id) => clients.find(id),
        )
        if (outcome.kind === 'error-page') return pageResponse(errorPage(outcome.message), 400)
        const page = await firstPage(outcome, cookies, new URL(request.url).searchParams.get('prompt'))
        if (!knownBrowser) page.headers.append('set-cookie', bindingCookie(binding, secureCookies))
        return page
      },
      {
        query: t.Object(
          {
            response_type: t.Optional(t.String()),
            client_id: t.Optional(t.String()),
            redirect_uri: t.Optional(t.String()),
            code_challenge: t.Optional(t.String()),
            code_challenge_method: t.Optional(t.String()),
            state: t.Optional(t.String()),
            scope: t.Optional(t.String()),
            resource: t.Optional(t.String()),
            prompt: t.Optional(
              t.String({
                description:
                  'login: ask for the password even if this browser signed in on these pages recently; create: show the sign-up form first (the sign-in page where REGISTRATION=closed)',
              }),
            ),
          },
          { additionalProperties: true },
        ),
        public: true,
        detail: htmlPage(
          'Authorization request (RFC 6749 §4.1.1 with PKCE): the sign-in page, or an error page; never a redirect',
        ),
      },
    )
    .post(
      '/api/v1/oauth/authorize/login',
      async ({ body, request }) => {
        const pending = await postedPending(request, body)
        if (pending instanceof Response) return pending
        // From the sign-up page's "Sign in instead": the sign-in form, empty.
        if (asksForPage(body)) return signInAgain(pending, body, undefined, 200)
        const credentials = { email: body.email!, password: body.password! }
        // The same budgets as POST /api/v1/auth/login: two doors to one password.
        const admission = throttles.login.admit(request, normalizeEmail(credentials.email))
        if (admission.refused) {
          const wait = admission.retryAfterSeconds
          return retryAfter(
            await signInAgain(
              pending,
              body,
              `Too many failed sign-ins. Try again in ${wait} second${wait === 1 ? '' : 's'}.`,
              429,
            ),
            wait,
          )
        }
        let user
        try {
          user = await accounts.verifyCredentials(credentials.email, credentials.password)
        } catch (error) {
          if (!(error instanceof HashingBusyError)) throw error
          return retryAfter(
            await signInAgain(
              pending,
              body,
              `Too many sign-ins at the moment. Try again in ${error.retryAfterSeconds} seconds.`,
              503,
            ),
            error.retryAfterSeconds,
          )
        }
        if (!user) return signInAgain(pending, body, 'Wrong e-mail or password.', 401)
        admission.forgive()
        return signedIn(request, pending, user, body.csrf_token)
      },
      {
        parse: 'urlencoded',
        body: t.Object({
          authorization_id: FormField(64),
          csrf_token: FormField(64),
          email: t.Optional(FormField(254)),
          password: t.Optional(FormField(PASSWORD_MAX)),
        }),
        public: true,
        detail: htmlPage(
          'The sign-in form of the authorization pages (the consent page once signed in); without e-mail and password, the sign-in page itself',
        ),
      },
    )
    .post(
      '/api/v1/oauth/authorize/register',
      async ({ body, request }) => {
        const pending = await postedPending(request, body)
        if (pending instanceof Response) return pending
        const registration = accounts.registration
        if (registration === 'closed')
          return signInAgain(pending, body, `Registration is closed. ${CLOSED_REGISTRATION_TEXT}`, 403)
        // From the sign-in page's "Create an account": the sign-up form, empty.
        if (asksForPage(body)) return signUpAgain(pending, registration, body, undefined, 200)
        const again = (error: string, status: number) => signUpAgain(pending, registration, body, error, status)
        const email = body.email!
        const password = body.password!
        if (!normalizeEmail(email)) return again('That is not an e-mail address.', 400)
        if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX)
          return again(`The password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters.`, 400)
        // The budget of POST /api/v1/auth/register: every registration counts, made or not.
        const admission = throttles.register.admit(request, undefined)
        if (admission.refused) {
          const wait = admission.retryAfterSeconds
          return retryAfter(
            await again(
              `Too many registrations from your address. Try again in ${wait} second${wait === 1 ? '' : 's'}.`,
              429,
            ),
            wait,
          )
        }
        let user
        try {
          user = await accounts.signUp({ email, password, name: body.name, invitation: body.invitation })
        } catch (error) {
          if (error instanceof HashingBusyError)
            return retryAfter(
              await again(`Too many sign-ins at the moment. Try again in ${error.retryAfterSeconds} seconds.`, 503),
              error.retryAfterSeconds,
            )
          if (error instanceof ConflictError)
            return again('An account with this e-mail address exists already: sign in instead.', 409)
          if (error instanceof HttpError && error.status === 403)
            return again(`${error.message[0]!.toUpperCase()}${error.message.slice(1)}.`, 403)
          throw error
        }
        return signedIn(request, pending, user, body.csrf_token)
      },
      {
        parse: 'urlencoded',
        body: t.Object({
          authorization_id: FormField(64),
          csrf_token: FormField(64),
          email: t.Optional(FormField(254)),
          name: t.Optional(FormField(200)),
          password: t.Optional(FormField(PASSWORD_MAX)),
          invitation: t.Optional(FormField(64)),
        }),
        public: true,
        detail: htmlPage(
          'The sign-up form of the authorization pages, as REGISTRATION allows: the account is made and signed in, and the authorization goes on (the consent page); without e-mail and password, the sign-up page itself',
        ),
      },
    )
    .post(
      '/api/v1/oauth/authorize',
      async ({ body, request }) => {
        const pending = await postedPending(request, body)
        if (pending instanceof Response) return pending
        const userId = await browserSessionUser(system, request.headers.get('cookie'))
        if (!userId || userId !== pending.user_id)
          return pageResponse(
            errorPage('Your sign-in for this request was not found. Return to the application and start again.'),
            403,
          )
        if (body.decision === 'sign-out') {
          // "Not you?": the pages' session ends and the same request asks for a sign-in again.
          await endBrowserSession(system, request.headers.get('cookie'))
          await bindUser(system, pending.id, null)
          const page = await signInAgain(pending, { csrf_token: body.csrf_token, email: '' }, undefined, 200)
          page.headers.append('set-cookie', endedSessionCookie(secureCookies))
          return page
        }
        // The person may narrow what the application asked for, never widen it.
        const granted = narrowScope(pending.scope, body.decision === 'allow' ? body.scope : undefined)
        if (!granted)
          return pageResponse(
            errorPage(
              'This form allowed more than the application asked for, and was not accepted. Return to the application and start again.',
            ),
            403,
          )
        if (!(await decide(system, pending.id))) return expiredPage()
        const state = pending.state ?? undefined
        if (body.decision === 'deny')
          return redirect303(
            redirectWith(pending.redirect_uri, baseUrl, {
              error: 'access_denied',
              error_description: 'the user denied the request',
              state,
            }),
          )
        return redirect303(
          redirectWith(pending.redirect_uri, baseUrl, {
            code: await issueCode(system, pending, userId, granted),
            state,
          }),
        )
      },
      {
        parse: 'urlencoded',
        body: t.Object({
          authorization_id: FormField(64),
          csrf_token: FormField(64),
          decision: t.Union([t.Literal('allow'), t.Literal('deny'), t.Literal('sign-out')]),
          scope: t.Optional(
            t.String({
              maxLength: 16,
              description:
                'with allow: the widest scope granted, the request’s own or a narrower one (absent: all it asked for)',
            }),
          ),
        }),
        public: true,
        detail: htmlPage(
          'The consent decision: redirects to the client with a code for the scope granted, or access_denied; sign-out shows the sign-in page again',
          303,
        ),
      },
    )
}
