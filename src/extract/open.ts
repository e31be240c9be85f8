// Which extractor a job runs: the one place that knows the implementations (extractor.ts knows
// none). The model when one is configured (LLM_URL), else the built-in one.
import type { Config } from '../config.ts'
import { builtinExtractor } from './builtin.ts'
import type { Extractor } from './extractor.ts'
import { modelExtractor } from './model.ts'

export function extractorFor(config: Pick<Config, 'llm'>): Extractor {
  return config.llm ? modelExtractor(config.llm) : builtinExtractor()
}
