// Runs once before the suite: the first embedded initdb takes seconds, longer than bun's
// per-hook timeout, so it happens here rather than inside some test file's beforeAll. Its
// afterAll runs once after the last test file: no scratch directory outlives the suite, those of
// tests that failed or killed a server included.
import { afterAll } from 'bun:test'
import { BACKEND, ensureEmbeddedTemplate, removeTempDirs } from './backend.ts'

if (BACKEND === 'embedded') await ensureEmbeddedTemplate()
afterAll(removeTempDirs)
