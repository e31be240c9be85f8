// The web app at /app (src/web/), served by kgs itself from its built files (scripts/build-web.ts),
// embedded in the binary like Swagger UI's: the pages load and call nothing but kgs. Every path
// under /app is the app's one page (it routes in the browser), so deep links and reloads work.
// The app is a public OAuth client kgs registers for itself (WEB_APP_CLIENT_ID): it signs in
// through the authorization pages with PKCE, and its token lives in the page's memory only.
import { runtime, type Assets } from '../runtime/index.ts'
import { Elysia } from 'elysia'
import type { RegistrationMode } from '../config-variables.ts'
import { publicAccess } from './access.ts'

/** 22 characters at least, as client ids are. */
export const WEB_APP_CLIENT_ID = 'kgs-web-app-builtin-client'
export const WEB_APP_PATH = '/app'
/** Where the authorization server sends the code: a path of the app, which finishes the sign-in. */
const CALLBACK_PATH = `${WEB_APP_PATH}/callback`

const HTML = 'text/html; charset=utf-8'
/**
 * No inline script or style, no eval, nothing from another origin, no framing. Images are kgs's
 * own (a source's images are served by /images/…) or data: URLs; the graph picture is a canvas.
 */
const PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ')

const ASSETS: Record<string, { path: keyof Assets; type: string }> = {
  'app.js': { path: 'webAppJs', type: 'text/javascript; charset=utf-8' },
  'app.css': { path: 'webAppCss', type: 'text/css; charset=utf-8' },
}

/** Escapes a value for an HTML attribute. */
const attribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')

/**
 * The cookie that says this browser holds a session of the app, beside the refresh token's
 * (oauth/app-session.ts): HttpOnly too, on the app's path, and no secret. The page tells the app
 * (kgs-session) whether to resume, so a browser without a session sends no refresh doomed to fail.
 */
export const APP_SIGNED_IN_COOKIE = 'kgs_app_signed_in'

const holdsAppSession = (request: Request) =>
  (request.headers.get('cookie') ?? '').split(';').some((pair) => pair.trim() === `${APP_SIGNED_IN_COOKIE}=1`)

/** What the page tells the app of the server's settings, beside its address and REGISTRATION. */
interface WebAppSettings {
  registration: RegistrationMode
  /** MEDIA_UPLOAD_MAX_BYTES: the "Add a source" page refuses a larger file before sending it. */
  uploadMaxBytes: number
}

/** The page: the app's configuration in meta tags (no inline script), its script and style; REGISTRATION decides what the sign-in card offers. */
function page(baseUrl: string, { registration, uploadMaxBytes }: WebAppSettings, resume: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="kgs-base-url" content="${attribute(baseUrl)}">
<meta name="kgs-client-id" content="${WEB_APP_CLIENT_ID}">
<meta name="kgs-registration" content="${registration}">
<meta name="kgs-session" content="${resume ? 'resume' : 'none'}">
<meta name="kgs-upload-max-bytes" content="${uploadMaxBytes}">
<title>kgs</title>
<link rel="stylesheet" href="${WEB_APP_PATH}/assets/app.css">
<script type="module" src="${WEB_APP_PATH}/assets/app.js"></script>
</head>
<body>
<div id="app"></div>
<noscript>The kgs web app needs JavaScript. The API is described at /swagger.</noscript>
</body>
</html>
`
}

const headers = (type: string) => ({
  'content-type': type,
  // The files change only with kgs (and the page with BASE_URL): revalidated, never stale.
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  ...(type === HTML ? { 'content-security-policy': PAGE_POLICY, 'referrer-policy': 'no-referrer' } : {}),
})

/** A browser asking for the service's root gets the app; API clients keep the JSON index. */
export const wantsHtml = (request: Request) => /\btext\/html\b/.test(request.headers.get('accept') ?? '')

/** The web app's client, which the root registers as one of kgs's own (oauth's registerFirstPartyClient). */
export const webAppClient = (baseUrl: string) => ({
  client_id: WEB_APP_CLIENT_ID,
  client_name: 'kgs web app',
  redirect_uris: [baseUrl + CALLBACK_PATH],
  scope: 'read write admin',
})

export interface WebAppOptions {
  /** Registers webAppClient(baseUrl). */
  registerClient: () => Promise<void>
  baseUrl: string
  settings: WebAppSettings
}

export function webApp({ registerClient, baseUrl, settings }: WebAppOptions) {
  const html = { resume: page(baseUrl, settings, true), none: page(baseUrl, settings, false) }
  // Registered when the page is first served, not at start-up: most instances never serve it.
  let registered: Promise<void> | undefined
  const serve = async ({ request }: { request: Request }) => {
    registered ??= registerClient().catch((error) => {
      registered = undefined
      throw error
    })
    await registered
    return new Response(holdsAppSession(request) ? html.resume : html.none, { headers: headers(HTML) })
  }
  const hide = { public: true, detail: { hide: true } } as const
  return new Elysia({ name: 'kgs/web-app' })
    .use(publicAccess)
    .get(
      `${WEB_APP_PATH}/assets/:asset`,
      ({ params, status }) => {
        const asset = ASSETS[params.asset]
        return asset
          ? runtime
              .assets()
              .then((paths) => runtime.openFile(paths[asset.path]))
              .then((file) => new Response(file, { headers: headers(asset.type) }))
          : status(404, { error: 'not found' })
      },
      hide,
    )
    .get(WEB_APP_PATH, serve, hide)
    .get(`${WEB_APP_PATH}/*`, serve, hide)
}
