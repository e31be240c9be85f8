// The graph's writes, whoever asks for them (the REST write routes, the MCP tools, and jobs such
// as process_source): each runs its write, then what that write sets off beyond its own
// transaction, so that a caller calls one function and nothing else. A write of facts or
// concepts marks the rows to (re)embed in its own transaction (markForEmbedding, common.ts) and
// here queues the job that embeds them; a deleted source's stored bytes are deleted; every write
// queues the copy of the repository's counts (repositories/counts.ts), which the answer does not
// wait for. A refusal (common.ts WriteRefusal) sets off nothing.
import type { Sql } from 'postgres'
import { discardBlobs, type BlobStore } from '../../blobs/store.ts'
import type { Pools } from '../../db/pools.ts'
import type { Logger } from '../../log.ts'
import type { EmbeddedKind } from './common.ts'
import { createConcept, deleteConcept, mergeConcepts, splitConcept, updateConcept } from './concepts.ts'
import { createFact, deleteFact, linkConcept, unlinkConcept, updateFact } from './facts.ts'
import { annotateReport, createReport, deleteReport, updateReport } from './reports.ts'
import { writeSourceKnowledge } from './source-knowledge.ts'
import { unmergeFact } from './fact-merges.ts'
import {
  addInvestigationSource,
  createInvestigation,
  createSource,
  deleteInvestigation,
  deleteSource,
  registerSource,
  removeInvestigationSource,
  updateInvestigation,
  updateSource,
} from './sources.ts'
import {
  createSummary,
  createSynthesis,
  deleteSummary,
  deleteSynthesis,
  replaceConceptSummaries,
  updateSummary,
  updateSynthesis,
  writeGroupSynthesis,
} from './summaries.ts'

export interface GraphWritesOptions {
  pools: Pick<Pools, 'forRepository'>
  blobs: BlobStore
  log: Logger
  /** The public base URL: an image fact's image_url points at its stored image there. */
  baseUrl: string
  /** Facts or concepts of the repository were marked for embedding: queues the job that embeds them (vectors/embed-jobs.ts). */
  embeddingChanged(repositoryId: string, kinds: readonly EmbeddedKind[]): Promise<void>
  /** The repository's graph changed: queues the copy of its counts (Repositories.graphChanged); never rejects. */
  graphChanged(repositoryId: string): Promise<void>
}

/** Drops a write function's database argument: the service opens the repository's. */
type InRepository<F> = F extends (sql: Sql, ...args: infer A) => Promise<infer T>
  ? (repositoryId: string, ...args: A) => Promise<T>
  : never

export function graphWrites({ pools, blobs, log, baseUrl, embeddingChanged, graphChanged }: GraphWritesOptions) {
  /** `write` in the repository, then its effects: the embedding of `embeds`, the counts copy. */
  const inRepository =
    <A extends unknown[], T>(write: (sql: Sql, ...args: A) => Promise<T>, ...embeds: EmbeddedKind[]) =>
    async (repositoryId: string, ...args: A): Promise<T> => {
      const result = await write(await pools.forRepository(repositoryId), ...args)
      if (embeds.length > 0) await embeddingChanged(repositoryId, embeds)
      void graphChanged(repositoryId)
      return result
    }
  /** Where this repository serves a stored source image, less the image's id. */
  const imageUrlPrefix = (repositoryId: string) => `${baseUrl}/${repositoryId}/images/`
  const createFactIn = inRepository(createFact, 'facts')
  const updateFactIn = inRepository(updateFact, 'facts')
  const deleteSourceIn = inRepository(deleteSource)

  return {
    createSource: inRepository(createSource),
    updateSource: inRepository(updateSource),
    registerSource: inRepository(registerSource),
    /** Deletes the source, then its stored bytes (a failure there is logged: the row is gone either way). */
    async deleteSource(...[repositoryId, id, options]: Parameters<InRepository<typeof deleteSource>>) {
      const deleted = await deleteSourceIn(repositoryId, id, options)
      await discardBlobs(blobs, log, 'graph: could not delete the bytes of a deleted source', ...deleted.storage_keys)
      return { id: deleted.id, removed: deleted.removed }
    },
    createInvestigation: inRepository(createInvestigation),
    updateInvestigation: inRepository(updateInvestigation),
    deleteInvestigation: inRepository(deleteInvestigation),
    addInvestigationSource: inRepository(addInvestigationSource),
    removeInvestigationSource: inRepository(removeInvestigationSource),
    createFact: (repositoryId: string, input: Parameters<typeof createFact>[1], options: { merge: boolean }) =>
      createFactIn(repositoryId, input, { ...options, imageUrlPrefix: imageUrlPrefix(repositoryId) }),
    updateFact: (
      repositoryId: string,
      id: string,
      changes: Parameters<typeof updateFact>[2],
      options: { ifMatch?: string },
    ) => updateFactIn(repositoryId, id, changes, { ...options, imageUrlPrefix: imageUrlPrefix(repositoryId) }),
    deleteFact: inRepository(deleteFact, 'facts'),
    /** Makes a merged text its own fact again (fact-merges.ts). */
    unmergeFact: inRepository(unmergeFact, 'facts'),
    linkConcept: inRepository(linkConcept),
    unlinkConcept: inRepository(unlinkConcept),
    createConcept: inRepository(createConcept, 'concepts'),
    updateConcept: inRepository(updateConcept, 'concepts'),
    deleteConcept: inRepository(deleteConcept, 'concepts'),
    mergeConcepts: inRepository(mergeConcepts, 'concepts'),
    splitConcept: inRepository(splitConcept, 'concepts'),
    /** What a source yields (the process_source job), in one transaction. */
    writeSourceKnowledge: inRepository(writeSourceKnowledge, 'facts', 'concepts'),
    createSummary: inRepository(createSummary),
    updateSummary: inRepository(updateSummary),
    deleteSummary: inRepository(deleteSummary),
    createSynthesis: inRepository(createSynthesis),
    updateSynthesis: inRepository(updateSynthesis),
    deleteSynthesis: inRepository(deleteSynthesis),
    /** A concept's summaries as the process_source job writes them, in place of those it had. */
    replaceConceptSummaries: inRepository(replaceConceptSummaries),
    /** A concept group's synthesis as the process_source job writes it, in place of the one it had. */
    writeGroupSynthesis: inRepository(writeGroupSynthesis),
    createReport: inRepository(createReport),
    updateReport: inRepository(updateReport),
    deleteReport: inRepository(deleteReport),
    /** The annotate_report job's annotations, in place of the automatic ones the report had. */
    annotateReport: inRepository(annotateReport),
  }
}

export type GraphWrites = ReturnType<typeof graphWrites>
