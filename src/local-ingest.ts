// The data directory's side of `kgs ingest` (src/ingest/cli.ts): with no kgs server holding the
// data, kgs starts in this process (listening on a free loopback port no one is told of, its job
// workers running the ingest_source jobs) and the documents are added as the ingest route adds
// them (ingest/add.ts), with no account: whoever may open the data directory owns it, as for the
// admin commands. An embedded data directory a server holds is refused, naming the way through it.
import { readFile, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { AdminError, requireData } from './admin.ts'
import { writeService } from './app.ts'
import { loadConfig, parseEnv } from './config.ts'
import { runningHolder } from './db/embedded.ts'
import { checkDocumentSize, queueAdditions, storeDocument, urlAdditions } from './ingest/add.ts'
import type { IngestTarget } from './ingest/cli.ts'
import { jobInScope } from './jobs/jobs.ts'
import type { Logger } from './log.ts'
import { startServer } from './server.ts'

export async function localIngestTarget(
  env: Record<string, string | undefined>,
  log: Logger,
  repositoryName: string,
): Promise<IngestTarget> {
  // Before the configuration is loaded: loading it makes the data directory's secret.
  requireData(parseEnv(env))
  const config = loadConfig(env)
  if (!config.databaseUrl && runningHolder(join(config.dataDir, 'pg')) !== undefined)
    throw new AdminError(
      'a kgs server is using this data directory: add through it with --url and --token (or KGS_URL and KGS_TOKEN)',
    )
  // At least one worker: the jobs this command queues are followed to their end here.
  const server = await startServer({ ...config, host: '127.0.0.1', port: 0, workers: Math.max(1, config.workers) }, log)
  try {
    const ctx = await server.ready
    const repository = await ctx.repositories.resolve(repositoryName)
    if (!repository) throw new AdminError(`no repository ${JSON.stringify(repositoryName)} (give its slug or id)`)
    const services = { writes: writeService(ctx), jobs: ctx.jobs, blobs: ctx.blobs, log }
    const maxBytes = config.mediaUploadMaxBytes
    return {
      async add(item, process) {
        let additions
        if (item.type === 'url') additions = urlAdditions([item.url])
        else {
          // Before reading it whole: a file past the limit is refused as an upload of it would be.
          const name = basename(item.path)
          const label = `the file ${JSON.stringify(name)}`
          checkDocumentSize((await stat(item.path)).size, maxBytes, label)
          additions = [
            await storeDocument(services, repository.id, {
              bytes: new Uint8Array(await readFile(item.path)),
              fileName: name,
              contentType: item.contentType,
              maxBytes,
              label,
            }),
          ]
        }
        const [queued] = await queueAdditions(services, {
          repositoryId: repository.id,
          createdBy: null,
          additions,
          process,
        })
        return { jobId: queued!.job.id }
      },
      job: (id) => jobInScope(ctx.pools.system, id, repository),
      close: () => server.stop(),
    }
  } catch (error) {
    await server.stop()
    throw error
  }
}
