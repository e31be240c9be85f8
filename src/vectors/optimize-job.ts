// optimize_vectors: compacts the files of a repository's facts or concepts vectors and, once the
// table holds enough rows, builds its index (VectorStore.optimize). Queued after the writes that
// leave small files behind: each embedding job, and an import whose vectors were kept. Running
// it again is harmless.
import { Type } from '@sinclair/typebox'
import { defineJobKind } from '../jobs/kinds.ts'

export const OPTIMIZE_VECTORS = 'optimize_vectors'

export const optimizeVectorsJob = defineJobKind({
  kind: OPTIMIZE_VECTORS,
  params: Type.Object(
    { kind: Type.Union([Type.Literal('facts'), Type.Literal('concepts')]) },
    { additionalProperties: false },
  ),
  maxAttempts: 3,
  repositoryScoped: true,
  run: async (job, { vectors }) => ({
    kind: job.params.kind,
    ...(await vectors.optimize(job.repositoryId!, job.params.kind)),
  }),
})
