// Nearest-neighbour search over a repository's facts or concepts: the query is embedded with the
// configured embedder, the vector store finds the nearest ids, and the graph store supplies the
// rows. The search route and the MCP search tool both call searchGraph.
import type { Sql } from 'postgres'
import { HttpError } from '../http/errors.ts'
import { conceptsByIds, factsByIds } from '../graph/store.ts'
import type { Concept, Fact } from '../graph/schemas.ts'
import { EmbeddingError, type Embedder } from './embedder.ts'
import { VectorDimensionError, type VectorStore } from './store.ts'

export type SearchKind = 'facts' | 'concepts'

export type SearchHit = { id: string; distance: number } & ({ kind: 'facts'; row: Fact } | { kind: 'concepts'; row: Concept })

/** The `k` rows of `kind` nearest to `q`, nearest first. A vector whose row was deleted since is skipped. */
export async function searchGraph(
  services: { vectors: VectorStore; embedder: Embedder },
  repository: { id: string },
  sql: Sql,
  query: { q: string; kind: SearchKind; k: number },
): Promise<SearchHit[]> {
  const { kind } = query
  let vector: Float32Array
  try {
    ;[vector] = (await services.embedder.embed([query.q])) as [Float32Array]
  } catch (error) {
    if (error instanceof EmbeddingError) throw new HttpError(502, `the embedding provider failed: ${error.message}`)
    throw error
  }
  let hits
  try {
    hits = await services.vectors.search(repository.id, kind, vector, query.k)
  } catch (error) {
    if (error instanceof VectorDimensionError) throw new HttpError(409, `the stored ${kind} vectors were made by another embedding model; re-embed them (POST jobs with kind embed_${kind})`)
    throw error
  }
  const ids = hits.map((h) => h.id)
  if (kind === 'facts') {
    const rows = new Map((await factsByIds(sql, ids)).map((r) => [r.id, r]))
    return hits.filter((h) => rows.has(h.id)).map((h) => ({ id: h.id, distance: h.distance, kind, row: rows.get(h.id)! }))
  }
  const rows = new Map((await conceptsByIds(sql, ids)).map((r) => [r.id, r]))
  return hits.filter((h) => rows.has(h.id)).map((h) => ({ id: h.id, distance: h.distance, kind, row: rows.get(h.id)! }))
}
