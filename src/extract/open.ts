// Which extractor a job runs: the one place that knows the implementations (extractor.ts knows
// none). The built-in one until a model is configured.
import type { Config } from '../config.ts'
import { builtinExtractor } from './builtin.ts'
import type { Extractor } from './extractor.ts'

export function extractorFor(_config: Config): Extractor {
  return builtinExtractor()
}
