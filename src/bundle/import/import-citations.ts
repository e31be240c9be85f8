// Citations in the markdown of summaries, syntheses and reports (docs/spec/bundle.md §5): a bundle
// cites its facts and concepts by portable UUID, the repository by local UUID. Each batch of those
// sections is rewritten here, with one lookup of the portable UUIDs kept in import_facts /
// import_concepts (import-rows.ts), before it reaches its writer; import-transaction.ts runs the
// lookup while the batch before is written.
import { citedIds, rewriteCitations, type CitedKind } from '../format/citations.ts'
import type { RowSection } from '../format/schema.ts'
import { arrayLiteral, type Batch, type RowContext } from './import-rows.ts'

/** The field of each section whose markdown cites facts and concepts. */
const CITING = {
  concept_summaries: 'content',
  concept_syntheses: 'content',
  reports: 'body_md',
} as const satisfies Partial<Record<RowSection, string>>

/** Whether a section's rows cite. */
export const cites = (section: RowSection) => section in CITING

/** The batch with each citation of a bundle fact or concept pointing at its local row; a section that does not cite as it is. */
export async function withLocalCitations(context: RowContext, batch: Batch): Promise<Batch> {
  const field = CITING[batch.section as keyof typeof CITING]
  if (!field) return batch
  const rows = batch.rows as unknown as Record<string, string>[]
  const texts = await localCitations(
    context,
    rows.map((row) => row[field]!),
  )
  return { ...batch, rows: rows.map((row, i) => ({ ...row, [field]: texts[i] })) as unknown as Batch['rows'] }
}

/** The texts with their citations made local; one lookup for all of them. */
async function localCitations(context: RowContext, texts: string[]): Promise<string[]> {
  const { tx } = context
  const cited = { fact: new Set<string>(), concept: new Set<string>() }
  for (const text of texts) {
    const ids = citedIds(text)
    for (const id of ids.fact) cited.fact.add(id)
    for (const id of ids.concept) cited.concept.add(id)
  }
  if (cited.fact.size + cited.concept.size === 0) return texts
  // Two batches' lookups may run at once: the first one's index serves both.
  context.portableIndex ??= tx
    .unsafe('CREATE INDEX ON import_facts (portable); CREATE INDEX ON import_concepts (portable)')
    .execute()
  await context.portableIndex
  const local = new Map<string, string>()
  const found = await tx<{ kind: CitedKind; portable: string; id: string }[]>`
    SELECT 'fact' AS kind, portable::text, id::text FROM import_facts WHERE portable = ANY(${arrayLiteral([...cited.fact])}::uuid[])
    UNION ALL
    SELECT 'concept', portable::text, id::text FROM import_concepts WHERE portable = ANY(${arrayLiteral([...cited.concept])}::uuid[])`
  for (const row of found) local.set(`${row.kind}:${row.portable}`, row.id)
  return texts.map((text) => {
    const result = rewriteCitations(text, (kind, id) => local.get(`${kind}:${id}`))
    context.citations.rewritten += result.rewritten
    context.citations.unresolved += result.unresolved
    return result.text
  })
}
