// annotate_report: links each sentence of a report's body to the facts most similar to it
// (docs/extract.md, "Annotating a report"). The body is split into sentences as the built-in
// extractor splits a source; each sentence is embedded with the configured embedder and its
// nearest facts found among the repository's fact vectors; those at or above the threshold are
// its annotations, scored by cosine similarity (posture `related`). They are written through the
// graph's write service in place of the report's automatic annotations, with the status
// `annotated`: one transaction, so a kill leaves the report as it was and a retry, or a rerun,
// writes the same annotations again.
import { Type } from '@sinclair/typebox'
import { proseSentences } from '../extract/builtin.ts'
import { getReport } from '../graph/store.ts'
import { defineJobKind, PermanentJobError, type JobServices, type RunningJob } from '../jobs/kinds.ts'
import { UUID_PATTERN } from '../uuid.ts'
import { VectorDimensionError } from '../vectors/store.ts'

export const ANNOTATE_REPORT = 'annotate_report'

/**
 * The cosine similarity a fact must reach to annotate a sentence, unless the report names its
 * own (similarity_threshold). With kgs-hash-v1, a sentence and a fact reach it when they share
 * most of their words, and unrelated texts stay well under it (docs/extract.md); a semantic
 * embedder's scores run higher, unrelated pairs included.
 */
export const ANNOTATION_THRESHOLD = 0.5
/** The facts one sentence is linked to at most, the most similar first. */
const ANNOTATIONS_PER_SENTENCE = 3
/** Sentences of a body annotated at most (the rest are counted, not linked). */
const MAX_ANNOTATED_SENTENCES = 2000
/** Searches in flight at once. */
const SEARCHES_AT_ONCE = 16

const AnnotateParams = Type.Object(
  { report_id: Type.String({ pattern: UUID_PATTERN }) },
  { additionalProperties: false },
)

async function annotate(job: RunningJob<typeof AnnotateParams.static>, services: JobServices) {
  const { embedder, vectors, writes } = services
  const repositoryId = job.repositoryId!
  const report = await getReport(await job.repository(), job.params.report_id)
  if (!report) throw new PermanentJobError('report not found')
  const threshold = report.similarity_threshold ?? ANNOTATION_THRESHOLD
  const sentences = proseSentences(report.body_md)
  const annotated = sentences.slice(0, MAX_ANNOTATED_SENTENCES)
  job.progress({ phase: 'embedding sentences', done: 0, total: annotated.length })
  const embedded = annotated.length > 0 ? await embedder.embed(annotated) : []
  job.progress({ phase: 'matching facts', done: 0, total: annotated.length })
  const annotations: { sentence_index: number; sentence_text: string; fact_id: string; score: number }[] = []
  for (let start = 0; start < annotated.length; start += SEARCHES_AT_ONCE) {
    job.signal.throwIfAborted()
    const found = await Promise.all(
      embedded.slice(start, start + SEARCHES_AT_ONCE).map(async (vector, i) => {
        try {
          return {
            index: start + i,
            neighbours: await vectors.search(repositoryId, 'facts', vector, ANNOTATIONS_PER_SENTENCE),
          }
        } catch (error) {
          if (error instanceof VectorDimensionError)
            throw new PermanentJobError(
              `the repository's fact vectors are not of the embedder's (${embedder.model}) dimensions: embed its facts again (an embed_facts job) and annotate again`,
            )
          throw error
        }
      }),
    )
    for (const { index, neighbours } of found)
      for (const neighbour of neighbours) {
        const score = 1 - neighbour.distance
        if (score >= threshold)
          annotations.push({ sentence_index: index, sentence_text: annotated[index]!, fact_id: neighbour.id, score })
      }
    job.progress({ done: Math.min(start + SEARCHES_AT_ONCE, annotated.length) })
  }
  job.progress({ phase: 'writing', done: 0, total: 1 })
  const written = await writes.annotateReport(repositoryId, report.id, {
    similarity_threshold: threshold,
    embedded_model: embedder.model,
    sentence_count: sentences.length,
    annotations,
  })
  job.progress({ done: 1 })
  return {
    report_id: report.id,
    sentences: sentences.length,
    annotated_sentences: new Set(annotations.map((a) => a.sentence_index)).size,
    annotations: written.annotations,
    similarity_threshold: threshold,
    model: embedder.model,
  }
}

export const annotateReportJob = defineJobKind({
  kind: ANNOTATE_REPORT,
  params: AnnotateParams,
  maxAttempts: 3,
  repositoryScoped: true,
  run: (job, services) => annotate(job, services),
})
