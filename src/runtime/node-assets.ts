// The assets as their files in node_modules (the web app's in dist/web/, scripts/build-web.ts): what Deno serves (it has no import `with { type: 'file' }`).
// deno.json maps bun-assets.ts to this module for Deno, whose checker cannot load the files Bun embeds.
import { fileURLToPath } from 'node:url'
import type { Assets } from './types.ts'

const fromDist = (path: string) => fileURLToPath(new URL(`../../dist/${path}`, import.meta.url).href)
const fromNodeModules = (path: string) => fileURLToPath(new URL(`../../node_modules/${path}`, import.meta.url).href)

/** Where scripts/build-web.ts builds the web app: what either runtime serves from source. */
export const webAppInDist = { webAppJs: fromDist('web/app.js'), webAppCss: fromDist('web/app.css') }

export const assets: Assets = {
  pgliteWasm: fromNodeModules('@electric-sql/pglite/dist/pglite.wasm'),
  initdbWasm: fromNodeModules('@electric-sql/pglite/dist/initdb.wasm'),
  pgliteData: fromNodeModules('@electric-sql/pglite/dist/pglite.data'),
  swaggerBundleJs: fromNodeModules('swagger-ui-dist/swagger-ui-bundle.js'),
  swaggerCss: fromNodeModules('swagger-ui-dist/swagger-ui.css'),
  swaggerRedirectJs: fromNodeModules('swagger-ui-dist/oauth2-redirect.js'),
  swaggerFavicon: fromNodeModules('swagger-ui-dist/favicon-32x32.png'),
  ...webAppInDist,
}
