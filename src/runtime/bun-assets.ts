// Bun embeds files imported `with { type: 'file' }` in the compiled binary and resolves them to
// paths there (and to their paths in node_modules when not compiled). Deno has no such import and
// its checker cannot load these files: deno.json's import map puts node-assets.ts in this module's place.
import pgliteWasm from '../../node_modules/@electric-sql/pglite/dist/pglite.wasm' with { type: 'file' }
import initdbWasm from '../../node_modules/@electric-sql/pglite/dist/initdb.wasm' with { type: 'file' }
import pgliteData from '../../node_modules/@electric-sql/pglite/dist/pglite.data' with { type: 'file' }
import swaggerBundleJs from '../../node_modules/swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }
import swaggerCss from '../../node_modules/swagger-ui-dist/swagger-ui.css' with { type: 'file' }
import swaggerRedirectJs from '../../node_modules/swagger-ui-dist/oauth2-redirect.js' with { type: 'file' }
import swaggerFavicon from '../../node_modules/swagger-ui-dist/favicon-32x32.png' with { type: 'file' }
import { buildAssets } from './build-assets.ts'
import { webAppInDist } from './node-assets.ts'
import type { Assets } from './types.ts'

// The web app is not imported here: it exists only once built, and every command (the CLI's
// offline ones too) loads this module. The binary embeds it through build-assets.ts.
export const assets: Assets = {
  pgliteWasm,
  initdbWasm,
  pgliteData,
  swaggerBundleJs,
  swaggerCss,
  swaggerRedirectJs,
  swaggerFavicon,
  ...(buildAssets.webApp ?? webAppInDist),
}
