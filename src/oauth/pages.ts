// Server-rendered pages of the authorization flow: small, accessible (labelled fields, one
// heading per page), readable on a phone, every interpolated value escaped, and sent with the
// security headers of docs/spec/decisions.md §5. The only style is an inline block allowed by its hash.
import { createHash } from 'node:crypto'
import { PASSWORD_MAX, PASSWORD_MIN } from '../accounts/passwords.ts'
import type { RegistrationMode } from '../config-variables.ts'
import { GRANT_SECONDS } from './consent.ts'
import type { Scope } from '../permissions.ts'

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f5f5f5;color:#1a1a1a}
main{max-width:26rem;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px #0002}
h1{font-size:1.3rem;margin:0 0 1rem}label{display:block;margin:.75rem 0 .25rem;font-weight:600}
input{box-sizing:border-box;width:100%;padding:.6rem;font-size:1rem;border:1px solid #888;border-radius:4px}
button{margin-top:1rem;padding:.6rem 1.2rem;font-size:1rem;border-radius:4px;border:1px solid #1a4d8f;background:#1a4d8f;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1a4d8f}.error{color:#a00}.host{font-family:monospace}ul{padding-left:1.2rem}
fieldset{margin:1rem 0;border:1px solid #888;border-radius:4px}legend{font-weight:600}label.choice{display:flex;gap:.5rem;font-weight:400}label.choice input{width:auto}.hint{margin:.25rem 0 0;font-size:.9rem;color:#444}.other{margin-top:1.5rem;border-top:1px solid #ddd}`

const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64')

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)
}

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`
}

/**
 * A page with its headers. `formTargets` widens form-action beyond 'self': browsers apply it to
 * the redirect that follows a form post, which for the consent form is the client's redirect URI.
 */
export function pageResponse(html: string, status = 200, formTargets: string[] = []): Response {
  return new Response(html, {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy':
        `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; form-action 'self' ${formTargets.join(' ')}; frame-ancestors 'none'; base-uri 'none'`.replace(
          ' ;',
          ';',
        ),
      'x-frame-options': 'DENY',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
    },
  })
}

export function errorPage(message: string): string {
  return layout(
    'Authorization error',
    `<h1>Authorization error</h1><p class="error" role="alert">${escapeHtml(message)}</p><p>Return to the application and try again.</p>`,
  )
}

/**
 * Who asks: the name the client chose (escaped like every value), the host that publishes its
 * metadata document when its client_id is one (a name anyone can claim, a host not), and where
 * the code goes.
 */
function requester(input: { clientName: string; clientHost?: string; redirectHost: string }): string {
  const name = `<strong>${escapeHtml(input.clientName || 'An application')}</strong>`
  const from = input.clientHost ? ` from <span class="host">${escapeHtml(input.clientHost)}</span>` : ''
  return `${name}${from} (redirecting to <span class="host">${escapeHtml(input.redirectHost)}</span>)`
}

export interface LoginPageInput {
  clientName: string
  /** The host of the client's metadata document, when its client_id is one. */
  clientHost?: string
  redirectHost: string
  authorizationId: string
  csrfToken: string
  /** Whether the page offers to create an account, or says how to get one. */
  registration: RegistrationMode
  error?: string
  email?: string
}

/** The fields every form of these pages posts: the pending authorization and its CSRF token. */
function formIds(input: { authorizationId: string; csrfToken: string }): string {
  return `<input type="hidden" name="authorization_id" value="${escapeHtml(input.authorizationId)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(input.csrfToken)}">`
}

const errorLine = (error: string | undefined) => (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '')

/** Where REGISTRATION is closed: how a person gets an account instead. */
export const CLOSED_REGISTRATION_TEXT =
  'Accounts here are made by an administrator: ask yours for one (they create it with kgs user create).'

/** Below the sign-in form: a way to the sign-up form, or, where registration is closed, who makes accounts. */
function accountOffer(input: LoginPageInput): string {
  if (input.registration === 'closed')
    return `<p class="other">No account yet? ${escapeHtml(CLOSED_REGISTRATION_TEXT)}</p>`
  const invited = input.registration === 'invite' ? ' You need the invitation code an administrator gave you.' : ''
  return `<form method="post" action="/api/v1/oauth/authorize/register" class="other">
${formIds(input)}
<p>No account yet?${invited}</p>
<button type="submit" class="secondary">Create an account</button>
</form>`
}

export function loginPage(input: LoginPageInput): string {
  return layout(
    'Sign in',
    `<h1>Sign in to continue</h1>
<p>${requester(input)} asks to access your account.</p>
${errorLine(input.error)}
<form method="post" action="/api/v1/oauth/authorize/login">
${formIds(input)}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(input.email ?? '')}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
${accountOffer(input)}`,
  )
}

/** The password rules of src/accounts/passwords.ts, said before the form is sent. */
const PASSWORD_RULES = `${PASSWORD_MIN} to ${PASSWORD_MAX} characters; any characters, spaces included.`

export interface RegistrationPageInput {
  clientName: string
  clientHost?: string
  redirectHost: string
  authorizationId: string
  csrfToken: string
  /** invite: the form asks for the invitation code. */
  registration: Exclude<RegistrationMode, 'closed'>
  error?: string
  email?: string
  name?: string
  invitation?: string
}

/** The sign-up form of the authorization flow: an account made here continues the authorization, signed in. */
export function registrationPage(input: RegistrationPageInput): string {
  const invitation =
    input.registration === 'invite'
      ? `<label for="invitation">Invitation code</label><input id="invitation" name="invitation" required maxlength="64" autocomplete="off" spellcheck="false" aria-describedby="invitation-hint" value="${escapeHtml(input.invitation ?? '')}">
<p id="invitation-hint" class="hint">The code an administrator gave you for this e-mail address.</p>`
      : ''
  return layout(
    'Create an account',
    `<h1>Create an account</h1>
<p>${requester(input)} asks to access your account. Create one to continue.</p>
${errorLine(input.error)}
<form method="post" action="/api/v1/oauth/authorize/register">
${formIds(input)}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${escapeHtml(input.email ?? '')}">
<label for="name">Name (optional)</label><input id="name" name="name" autocomplete="name" maxlength="200" value="${escapeHtml(input.name ?? '')}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" aria-describedby="password-rules">
<p id="password-rules" class="hint">${escapeHtml(PASSWORD_RULES)}</p>
${invitation}
<button type="submit">Create the account</button>
</form>
<form method="post" action="/api/v1/oauth/authorize/login" class="other">
${formIds(input)}
<p>Already have an account?</p>
<button type="submit" class="secondary">Sign in instead</button>
</form>`,
  )
}

/**
 * What each scope allows, as scopeNeeded (src/permissions.ts) decides it: `read` the *:read
 * permissions, `admin` the ADMIN_SCOPE_ONLY ones, `write` the rest. Always within the user's roles.
 */
const SCOPE_TEXT: Record<string, string> = {
  read: 'see what your roles let you see (repositories, their graphs, members and jobs, your profile), and change nothing',
  write:
    'see, and change what your roles let you change: create and edit repositories, import and export graphs, push and pull them in the registry, cancel jobs, rename your profile; not roles, members or users, and not deleting repositories',
  admin: 'everything your roles allow, including managing roles, members and users, and deleting repositories',
}

/** What the person may choose to allow, by the widest scope allowed (grantableScopes, consent.ts). */
const ALLOW_TEXT: Record<Scope, string> = {
  admin: 'Allow everything it asks for, administration included',
  write: 'Allow read and write',
  read: 'Allow read only',
}

export interface ConsentPageInput {
  clientName: string
  /** One of kgs's own applications (registerFirstPartyClient), not a self-registered one. */
  firstParty: boolean
  /** The host of the client's metadata document, when its client_id is one. */
  clientHost?: string
  redirectHost: string
  scopes: string[]
  /** The scopes the person may grant instead, widest first: a choice when there are several. */
  grantable: Scope[]
  userEmail: string
  authorizationId: string
  csrfToken: string
}

export function consentPage(input: ConsentPageInput): string {
  const scopes = input.scopes
    .map((s) => `<li><strong>${escapeHtml(s)}</strong>: ${escapeHtml(SCOPE_TEXT[s] ?? s)}</li>`)
    .join('')
  return layout(
    'Allow access?',
    `<h1>Allow access?</h1>
<p>${requester(input)} asks to:</p>
<ul>${scopes}</ul>
${
  input.firstParty
    ? '<p>This is kgs’s own application: kgs registered it, and vouches for its name and where it redirects.</p>'
    : input.clientHost
      ? `<p>kgs has not verified this application: <span class="host">${escapeHtml(input.clientHost)}</span> describes it, and its name is that site’s claim. Allow only if you trust <span class="host">${escapeHtml(input.clientHost)}</span> and <span class="host">${escapeHtml(input.redirectHost)}</span>.</p>`
      : `<p>kgs has not verified this application: it registered itself, and its name is its own claim. Allow only if you trust <span class="host">${escapeHtml(input.redirectHost)}</span>.</p>`
}
<p>No application can change your password or sign-in e-mail, whatever it is allowed.</p>
<p>The access lasts at most ${GRANT_SECONDS / 86_400} days; then the application must ask again.</p>
<form method="post" action="/api/v1/oauth/authorize">
<input type="hidden" name="authorization_id" value="${escapeHtml(input.authorizationId)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(input.csrfToken)}">
<p>Signed in as ${escapeHtml(input.userEmail)}. <button type="submit" name="decision" value="sign-out" class="secondary">Not you? Sign out</button></p>
${
  input.grantable.length > 1
    ? `<fieldset><legend>What may it do?</legend>${input.grantable
        .map(
          (scope, i) =>
            `<label class="choice"><input type="radio" name="scope" value="${scope}"${i === 0 ? ' checked' : ''}>${escapeHtml(ALLOW_TEXT[scope])}</label>`,
        )
        .join('')}</fieldset>`
    : ''
}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`,
  )
}

/**
 * What form-action must allow for the redirect after the consent form: the redirect URI's origin,
 * or its scheme. A CSP source cannot hold an IPv6 literal (Chromium drops `http://[::1]:PORT` as
 * invalid and then blocks the redirect), so for [::1] the source is the scheme `http:`: the form
 * itself still posts only to 'self', and the redirect goes where the server sends it.
 */
export function formTarget(redirectUri: string): string {
  const url = new URL(redirectUri)
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return url.protocol
  return url.hostname.startsWith('[') ? url.protocol : url.origin
}

/**
 * Shown to the user as where the code goes: the host of an http(s) redirect URI, or the whole
 * URI of a private-use scheme, whose "host" is whatever the client chose to write there.
 */
export function redirectHost(redirectUri: string): string {
  const url = new URL(redirectUri)
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.host : redirectUri
}
