// Swagger UI at /swagger, served by kgs itself from swagger-ui-dist's files, embedded in the
// binary like PGlite's (src/db/pglite-assets.ts): the page works with no network beyond kgs.
// "Authorize" offers a bearer token, or OAuth 2.0 authorization code + PKCE against kgs's own
// authorization server with a public, first-party client kgs registers for itself (SWAGGER_CLIENT_ID).
import { runtime, type Assets } from '../runtime/index.ts'
import { Elysia } from 'elysia'
import { publicAccess } from './access.ts'
import { DOCUMENT_PATH } from './openapi.ts'

/** 22 characters at least, as client ids are. */
export const SWAGGER_CLIENT_ID = 'kgs-swagger-ui-builtin'
const REDIRECT_PATH = '/swagger/oauth2-redirect.html'

const HTML = 'text/html; charset=utf-8'
const JS = 'text/javascript; charset=utf-8'
/**
 * The pages may load and call nothing but kgs itself (Swagger UI sets inline styles and shows
 * data: images), and may not be framed.
 */
const PAGE_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

/** The embedded files change only with kgs; the page and its configuration with BASE_URL too. */
const respond = (body: string | Blob, type: string, cache = 'no-cache') =>
  new Response(body, {
    headers: {
      'content-type': type,
      'cache-control': cache,
      ...(type === HTML ? { 'content-security-policy': PAGE_POLICY } : {}),
    },
  })

const ASSETS: Record<string, { path: keyof Assets; type: string }> = {
  'swagger-ui-bundle.js': { path: 'swaggerBundleJs', type: JS },
  'swagger-ui.css': { path: 'swaggerCss', type: 'text/css; charset=utf-8' },
  // oauth2-redirect.html loads it by this relative name.
  'oauth2-redirect.js': { path: 'swaggerRedirectJs', type: JS },
  'favicon.png': { path: 'swaggerFavicon', type: 'image/png' },
}

/** swagger-ui-dist's oauth2-redirect.html: the page the authorization server sends the code to. */
const REDIRECT_PAGE =
  '<!doctype html>\n<html lang="en-US">\n<body>\n<script src="oauth2-redirect.js"></script>\n</body>\n</html>\n'

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kgs API</title>
<link rel="stylesheet" href="/swagger/swagger-ui.css">
<link rel="icon" type="image/png" href="/swagger/favicon.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/swagger/swagger-ui-bundle.js"></script>
<script src="/swagger/init.js"></script>
</body>
</html>
`

/** The page's configuration, a script of its own rather than inline. */
function initScript(baseUrl: string): string {
  const options = {
    url: DOCUMENT_PATH,
    dom_id: '#swagger-ui',
    // The default validator badge would send the document to validator.swagger.io.
    validatorUrl: null,
    oauth2RedirectUrl: baseUrl + REDIRECT_PATH,
    tryItOutEnabled: true,
    displayRequestDuration: true,
  }
  const oauth = { clientId: SWAGGER_CLIENT_ID, usePkceWithAuthorizationCodeGrant: true, scopes: 'read write' }
  return `window.ui = SwaggerUIBundle(${JSON.stringify(options)});\nwindow.ui.initOAuth(${JSON.stringify(oauth)});\n`
}

/** The Swagger UI client, which the root registers as one of kgs's own (oauth's registerFirstPartyClient). */
export const swaggerClient = (baseUrl: string) => ({
  client_id: SWAGGER_CLIENT_ID,
  client_name: 'kgs Swagger UI',
  redirect_uris: [baseUrl + REDIRECT_PATH],
  scope: 'read write admin',
})

export interface SwaggerUiOptions {
  /** Registers swaggerClient(baseUrl). */
  registerClient: () => Promise<void>
  baseUrl: string
  /** The OpenAPI document served at /swagger/json. */
  document: () => object
}

export function swaggerUi({ registerClient, baseUrl, document }: SwaggerUiOptions) {
  const init = initScript(baseUrl)
  // Registered when the page is first served, not at start-up: most instances never serve it.
  let registered: Promise<void> | undefined
  const hide = { public: true, detail: { hide: true } } as const
  return new Elysia({ name: 'kgs/swagger-ui' })
    .use(publicAccess)
    .get(
      '/swagger',
      async () => {
        registered ??= registerClient().catch((error) => {
          registered = undefined
          throw error
        })
        await registered
        return respond(PAGE, HTML)
      },
      hide,
    )
    .get(DOCUMENT_PATH, () => document(), hide)
    .get('/swagger/init.js', () => respond(init, JS), hide)
    .get(REDIRECT_PATH, () => respond(REDIRECT_PAGE, HTML), hide)
    .get(
      '/swagger/:asset',
      ({ params, status }) => {
        const asset = ASSETS[params.asset]
        return asset
          ? runtime
              .assets()
              .then((paths) => runtime.openFile(paths[asset.path]))
              .then((file) => respond(file, asset.type, 'public, max-age=3600'))
          : status(404, { error: 'not found' })
      },
      hide,
    )
}
