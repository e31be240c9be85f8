// A job that does nothing: it measures the queue itself (scripts/bench/jobs.ts) and lets an
// operator check that workers are alive.
import { Type } from '@sinclair/typebox'
import { defineJobKind } from './kinds.ts'

export const noopJob = defineJobKind({
  kind: 'noop',
  params: Type.Object({}, { additionalProperties: false }),
  maxAttempts: 1,
  repositoryScoped: false,
  run: async () => ({}),
})
