// Runs once before the suite: the first embedded initdb takes seconds, longer than bun's
// per-hook timeout, so it happens here rather than inside some test file's beforeAll.
import { BACKEND, ensureEmbeddedTemplate } from './backend.ts'

if (BACKEND === 'embedded') await ensureEmbeddedTemplate()
