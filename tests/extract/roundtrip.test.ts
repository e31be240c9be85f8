// A repository made by ingesting and processing documents moves like any other: exported, imported
// into another repository from the registry, and exported again with the same options, it gives
// the same canonical hash; the graph the import made is the original's row for row (by natural
// keys, tests/helpers/graph-dump.ts); and the bundle's metadata names the promptset that drew its
// facts and concepts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { Account, api } from '../helpers/api.ts'
import { fixture } from '../helpers/fixture.ts'
import { dumpGraph } from '../helpers/graph-dump.ts'
import { waitForJob } from '../helpers/jobs.ts'
import type { TestServer } from '../helpers/server.ts'
import { builtinExtractor } from '../../src/extract/builtin.ts'
import { summarizeBundle } from '../../src/bundle/format/tools.ts'
import type { Repository } from '../../src/repositories/schemas.ts'

const DOCUMENTS = {
  'kilns.md': `# Kilns

A kiln fires clay at temperatures above one thousand degrees Celsius.

## Glazes

Potters apply a glaze before the second firing in the kiln. The glaze melts into a glassy coat.
`,
  'wheels.txt': `Potters throw clay on a wheel.

The wheel spins while the potter shapes the clay with wet hands. Potters fire the shaped clay in a kiln.
`,
}
const EXPORT = { name: 'Pottery', description: 'Documents on pottery', exported_at: '2026-12-01T00:00:00Z' }

describe(`an ingested repository exported, imported and exported again (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let original: Repository
  let copy: Repository

  beforeAll(async () => {
    ;({
      server,
      http,
      users: { owner },
      repositories: { original, copy },
    } = await fixture({
      server: { env: { WORKERS: '1' } },
      users: { owner: 'member' },
      repositories: { original: { by: 'owner', name: 'Pottery' }, copy: { by: 'owner', name: 'Pottery copy' } },
    }))
  })
  afterAll(() => server.stop())

  const finish = (slug: string, id: string) => waitForJob(http, `/${slug}/jobs/${id}`, owner.token)
  const exportOf = async (slug: string) => {
    const started = await http.post(`/${slug}/export-graph`, { ...EXPORT, include_bodies: true }, owner.token)
    expect(started.status).toBe(202)
    const job = await finish(slug, started.body.id)
    expect(job.status).toBe('succeeded')
    return job.result as { graph_id: string; sha256: string; counts: Record<string, number> }
  }
  const graphOf = async (repository: Repository) => {
    const sql = await server.context.pools.forRepository(repository.id)
    const { vectors: _, ...graph } = await dumpGraph(sql, repository.id, server.context)
    return graph
  }

  test('the same canonical hash, the same graph, and the promptset in the metadata', async () => {
    const form = new FormData()
    for (const [name, text] of Object.entries(DOCUMENTS))
      form.append('file', new File([text], name, { type: name.endsWith('.md') ? 'text/markdown' : 'text/plain' }))
    const added = await http.call<{ jobs: { id: string }[] }>('POST', `/${original.slug}/ingest`, {
      raw: form,
      token: owner.token,
    })
    expect(added.status).toBe(202)
    for (const { id } of added.body.jobs) {
      const ingested = await finish(original.slug, id)
      const processing = (ingested.result as { process_job_id: string }).process_job_id
      expect((await finish(original.slug, processing)).status).toBe('succeeded')
    }

    const first = await exportOf(original.slug)
    expect(first.counts).toMatchObject({ sources: 2 })
    expect(first.counts.facts).toBeGreaterThan(3)
    expect(first.counts.concepts).toBeGreaterThan(0)
    const imported = await http.post(`/${copy.slug}/import-graph`, { graph_id: first.graph_id }, owner.token)
    expect(imported.status).toBe(202)
    expect((await finish(copy.slug, imported.body.id)).status).toBe('succeeded')
    const second = await exportOf(copy.slug)
    expect(second.sha256).toBe(first.sha256)
    expect(await graphOf(copy)).toEqual(await graphOf(original))

    const download = await fetch(`${server.url}/${copy.slug}/export-graph/download`, {
      headers: { authorization: `Bearer ${owner.token}` },
    })
    expect(download.status).toBe(200)
    const summary = await summarizeBundle(download.body!)
    expect(summary.metadata.promptset_hashes).toEqual([builtinExtractor().promptsetHash])
  })
})
