// Runs first in every `bun test`: the server embeds the web app's built files (src/runtime/bun-assets.ts),
// so they are built here when missing or older than src/web/, before any test loads the server.
import { buildWebApp } from '../../scripts/build-web.ts'

await buildWebApp({ ifStale: true })
