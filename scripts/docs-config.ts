// Writes docs/configuration.md from EnvSchema (tests/config.test.ts fails while it is stale).
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CONFIG_DOC_PATH, configMarkdown } from '../src/config-reference.ts'

writeFileSync(join(import.meta.dir, '..', CONFIG_DOC_PATH), configMarkdown())
