// Runs first in every `bun test`: the server serves the web app's built files (dist/web/), and the
// tests start it in their own process, not through `kgs serve` (which builds them itself), so they
// are built here when missing or older than src/web/, before any test loads the server.
import { buildWebApp } from '../../scripts/build-web.ts'

await buildWebApp({ ifStale: true })
