// What the authorization pages (page-routes.ts) answer, once a route has read its request: the
// page a pending authorization shows next (sign-in, sign-up or consent, or straight back to
// kgs's own app), the refusal of a form posted out of turn, and the pages saying so.
import type { Sql } from 'postgres'
import type { Accounts } from '../accounts/accounts.ts'
import type { User } from '../accounts/schemas.ts'
import { WEB_APP_CLIENT_ID } from '../http/web-app.ts'
import { redirectWith, type AuthorizeOutcome } from './authorize.ts'
import { documentHost } from './client-metadata.ts'
import { findClient } from './clients.ts'
import {
  bindUser,
  boundToBrowser,
  browserSessionUser,
  csrfMatches,
  decide,
  endBrowserSession,
  findPending,
  grantableScopes,
  type PendingAuthorization,
  issueCode,
  sessionCookie,
  startBrowserSession,
} from './consent.ts'
import {
  consentPage,
  errorPage,
  formTarget,
  loginPage,
  pageResponse,
  redirectHost,
  registrationPage,
  type RegistrationPageInput,
} from './pages.ts'

export const redirect303 = (location: string) =>
  new Response(null, {
    status: 303,
    headers: { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
  })
export const expiredPage = () =>
  pageResponse(
    errorPage('This sign-in request has expired or was already answered. Return to the application and start again.'),
    400,
  )
const csrfPage = () =>
  pageResponse(
    errorPage(
      'This form was not issued for this request (CSRF check failed). Return to the application and start again.',
    ),
    403,
  )
const otherBrowserPage = () =>
  pageResponse(
    errorPage(
      'This sign-in request was started in another browser and was not accepted. Return to the application and start again.',
    ),
    403,
  )
/** A page that asks the browser to come back after `seconds` (429, 503). */
export function retryAfter(page: Response, seconds: number): Response {
  page.headers.set('retry-after', String(seconds))
  return page
}
const crossSitePage = () =>
  pageResponse(
    errorPage(
      'This form was posted from another site and was not accepted. Return to the application and start again.',
    ),
    403,
  )

/**
 * Whether a browser says (Fetch Metadata) that the pages' form was posted from another site or
 * subdomain. The CSRF token alone cannot stop login CSRF, where an attacker posts their own
 * sign-in from their page to put the victim's browser in the attacker's account; the Origin
 * header cannot tell either, since the pages' no-referrer policy makes browsers send "null".
 * Clients that send no fetch metadata (not browsers) are let through.
 */
function postedFromAnotherSite(request: Request): boolean {
  const site = request.headers.get('sec-fetch-site')
  return site === 'cross-site' || site === 'same-site'
}

export interface AuthorizationPagesOptions {
  system: Sql
  baseUrl: string
  accounts: Accounts
}

/** The pages' steps, each answering the page the person sees next. */
export function authorizationPages({ system, baseUrl, accounts }: AuthorizationPagesOptions) {
  const secureCookies = baseUrl.startsWith('https:')
  /** The open pending authorization a form of these pages answers, or the page refusing the post. */
  const postedPending = async (
    request: Request,
    body: { authorization_id: string; csrf_token: string },
  ): Promise<PendingAuthorization | Response> => {
    if (postedFromAnotherSite(request)) return crossSitePage()
    const pending = await findPending(system, body.authorization_id)
    if (!pending?.open) return expiredPage()
    if (!csrfMatches(pending, body.csrf_token)) return csrfPage()
    if (!boundToBrowser(pending, request.headers.get('cookie'))) return otherBrowserPage()
    return pending
  }
  /** The consent page for a pending authorization whose user is known. */
  const consent = async (
    pending: { id: string; client_id: string; redirect_uri: string; scope: string },
    user: User,
    csrfToken: string,
  ) => {
    if (pending.client_id === WEB_APP_CLIENT_ID) return skipConsent(pending.id, user.id)
    const client = await findClient(system, pending.client_id)
    const html = consentPage({
      clientName: client?.client_name ?? '',
      clientHost: documentHost(pending.client_id),
      firstParty: client?.first_party ?? false,
      redirectHost: redirectHost(pending.redirect_uri),
      scopes: pending.scope.split(' '),
      grantable: grantableScopes(pending.scope),
      userEmail: user.email,
      authorizationId: pending.id,
      csrfToken,
    })
    return pageResponse(html, 200, [formTarget(pending.redirect_uri)])
  }
  /**
   * kgs's own web app asks no consent: the person signing in is opening kgs itself, not letting
   * a third party in. The code goes back at once, as after an Allow.
   */
  const skipConsent = async (pendingId: string, userId: string) => {
    const pending = await findPending(system, pendingId)
    if (!pending?.open || !(await decide(system, pending.id))) return expiredPage()
    return redirect303(
      redirectWith(pending.redirect_uri, baseUrl, {
        code: await issueCode(system, pending, userId),
        state: pending.state ?? undefined,
      }),
    )
  }
  /** Who asks, as the sign-in and sign-up pages name it. */
  const asking = async (pending: { id: string; client_id: string; redirect_uri: string }, csrfToken: string) => {
    const client = await findClient(system, pending.client_id)
    return {
      clientName: client?.client_name ?? '',
      clientHost: documentHost(pending.client_id),
      redirectHost: redirectHost(pending.redirect_uri),
      authorizationId: pending.id,
      csrfToken,
    }
  }
  /** The sign-in page once more, saying what went wrong. */
  const signInAgain = async (
    pending: { id: string; client_id: string; redirect_uri: string },
    form: { csrf_token: string; email?: string },
    error: string | undefined,
    status: number,
  ) =>
    pageResponse(
      loginPage({
        ...(await asking(pending, form.csrf_token)),
        registration: accounts.registration,
        email: form.email,
        error,
      }),
      status,
    )
  /** The sign-up page (REGISTRATION open or invite), with what was typed but the password, and what went wrong. */
  const signUpAgain = async (
    pending: { id: string; client_id: string; redirect_uri: string },
    registration: RegistrationPageInput['registration'],
    form: { csrf_token: string; email?: string; name?: string; invitation?: string },
    error: string | undefined,
    status: number,
  ) =>
    pageResponse(
      registrationPage({
        ...(await asking(pending, form.csrf_token)),
        registration,
        email: form.email,
        name: form.name,
        invitation: form.invitation,
        error,
      }),
      status,
    )
  /** Signed in on these pages (a new session of theirs): the consent page, or straight back to kgs's own app. */
  const signedIn = async (request: Request, pending: PendingAuthorization, user: User, csrfToken: string) => {
    await bindUser(system, pending.id, user.id)
    const response = await consent(pending, user, csrfToken)
    await endBrowserSession(system, request.headers.get('cookie'))
    response.headers.append('set-cookie', sessionCookie(await startBrowserSession(system, user.id), secureCookies))
    return response
  }

  /**
   * The consent page if the browser signed in on these pages recently, else the sign-in page;
   * always the sign-in page with `prompt=login` (OpenID Connect's), which a client sends after
   * its sign-out, and the sign-up page with `prompt=create` (OpenID Connect's Prompt Create)
   * where REGISTRATION allows one.
   */
  const firstPage = async (
    outcome: Extract<AuthorizeOutcome, { kind: 'login' }>,
    cookies: string | null,
    prompt: string | null,
  ) => {
    const userId = prompt === 'login' || prompt === 'create' ? undefined : await browserSessionUser(system, cookies)
    const user = userId ? await accounts.findUser(userId) : undefined
    if (!user) {
      const page = {
        clientName: outcome.client.client_name,
        clientHost: documentHost(outcome.client.client_id),
        redirectHost: redirectHost(outcome.redirectUri),
        authorizationId: outcome.authorizationId,
        csrfToken: outcome.csrfToken,
      }
      const registration = accounts.registration
      return pageResponse(
        prompt === 'create' && registration !== 'closed'
          ? registrationPage({ ...page, registration })
          : loginPage({ ...page, registration }),
      )
    }
    await bindUser(system, outcome.authorizationId, user.id)
    return consent(
      {
        id: outcome.authorizationId,
        client_id: outcome.client.client_id,
        redirect_uri: outcome.redirectUri,
        scope: outcome.scope,
      },
      user,
      outcome.csrfToken,
    )
  }

  return { secureCookies, postedPending, signInAgain, signUpAgain, signedIn, firstPage }
}
