// Every job kind this build can run.
import type { JobKind } from './kinds.ts'
import { noopJob } from './noop.ts'
import { embedConceptsJob, embedFactsJob } from '../vectors/embed-jobs.ts'

export const BUILTIN_JOB_KINDS: readonly JobKind[] = [noopJob, embedFactsJob, embedConceptsJob]
