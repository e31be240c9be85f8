// Worker entry points, composition roots at the root of src/ beside main.ts, resolved from this file: in development that is the
// source tree; in the compiled binary every entry point sits at the same relative path under
// Bun's embedded root, where import.meta.url of bundled code points at the root too.
export const INITDB_WORKER_URL = new URL('./initdb-thread.ts', import.meta.url).href
export const JOB_WORKER_URL = new URL('./job-thread.ts', import.meta.url).href
export const HASHER_WORKER_URL = new URL('./hasher-thread.ts', import.meta.url).href
export const GZIP_WORKER_URL = new URL('./gzip-thread.ts', import.meta.url).href
