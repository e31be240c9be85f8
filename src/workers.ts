// Worker entry points, resolved from this file at the root of src/: in development that is the
// source tree; in the compiled binary every entry point sits at the same relative path under
// Bun's embedded root, where import.meta.url of bundled code points at the root too.
export const INITDB_WORKER_URL = new URL('./db/initdb-worker.ts', import.meta.url).href
export const JOB_WORKER_URL = new URL('./jobs/worker-thread.ts', import.meta.url).href
export const HASHER_WORKER_URL = new URL('./accounts/hasher-thread.ts', import.meta.url).href
export const GZIP_WORKER_URL = new URL('./gzip-thread.ts', import.meta.url).href
