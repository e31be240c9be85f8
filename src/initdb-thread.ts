// Runs initdb for a new embedded cluster on a worker thread: PGlite executes synchronously
// inside wasm, and a first initdb takes seconds that would otherwise freeze the event loop
// (and with it /healthz) of a freshly started server.
import { PGlite } from '@electric-sql/pglite'
import { loadPGliteAssets } from './db/pglite-assets.ts'

declare const self: Worker

self.onmessage = async (event: MessageEvent<{ dir: string }>) => {
  try {
    const db = await PGlite.create(event.data.dir, { ...(await loadPGliteAssets()) })
    await db.close()
    self.postMessage({ ok: true })
  } catch (error) {
    self.postMessage({ ok: false, error: (error as Error).message ?? String(error) })
  }
}
