// Entry point of a job worker thread: opens this thread's own connections and stores, then runs
// one JobWorker until told to stop. Embedded databases belong to the main thread (PGlite runs
// there); this thread asks it to open one and then connects to its socket like any client.
import { createLogger } from './log.ts'
import { Pools } from './db/pools.ts'
import { openBlobStore } from './blobs/open.ts'
import { databaseCreationLock } from './vectors/creation-lock.ts'
import { VectorStore } from './vectors/store.ts'
import { createEmbedder } from './vectors/embedder.ts'
import { embeddingQueue } from './vectors/embed-jobs.ts'
import { nearFactFinder } from './vectors/near-facts.ts'
import { graphWrites } from './graph/write/service.ts'
import { createRegistryClient } from './registry/client.ts'
import { loadJobKinds } from './job-kinds.ts'
import { graphChanged } from './repositories/counts.ts'
import { Jobs } from './jobs/jobs.ts'
import type { FromWorker, ToWorker } from './jobs/protocol.ts'
import { JobWorker } from './jobs/worker.ts'

declare const self: Worker

const post = (message: FromWorker) => self.postMessage(message)
const pendingSockets = new Map<number, { resolve(path: string): void; reject(error: Error): void }>()
let nextRequestId = 1
let worker: JobWorker | undefined
let shutdown: (() => Promise<void>) | undefined

function socketFor(name: string): Promise<string> {
  const requestId = nextRequestId++
  return new Promise((resolve, reject) => {
    pendingSockets.set(requestId, { resolve, reject })
    post({ type: 'socket', requestId, name })
  })
}

async function start(message: Extract<ToWorker, { type: 'start' }>): Promise<void> {
  const { config, workerId } = message
  const log = createLogger(config.logLevel)
  const pools = await Pools.open({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    max: 2,
    asyncCommit: true,
    embeddedSockets: { socketFor },
  })
  const vectors = await VectorStore.open(config.lancedbUri, {
    storageOptions: config.lancedbStorageOptions,
    creationLock: databaseCreationLock(pools.system),
  })
  const kinds = await loadJobKinds(message.extraKindModules)
  // Events go out through the main thread's bus (on the embedded database, it alone delivers them).
  const bus = {
    publish: async (_sql: unknown, channel: string, payload: string) => post({ type: 'publish', channel, payload }),
  }
  const jobs = new Jobs(pools.system, bus, kinds)
  // The runner always passes the base URL in use (server.ts); the registry defaults to it.
  const baseUrl = config.baseUrl!
  const blobs = openBlobStore(config)
  const enqueue = jobs.enqueue.bind(jobs)
  const repositoryChanged = (repositoryId: string) => graphChanged(pools, bus, repositoryId, log)
  const embedder = createEmbedder(config)
  const services = {
    pools,
    vectors,
    embedder,
    blobs,
    registry: createRegistryClient(config, baseUrl),
    config: { ...config, baseUrl },
    log,
    enqueue,
    nearFacts: nearFactFinder({ pools, vectors, embedder, similarity: config.factMergeSimilarity }),
    // Jobs that write the graph (process_source) write as the routes do, with what a write sets off.
    writes: graphWrites({
      pools,
      blobs,
      log,
      baseUrl,
      embeddingChanged: embeddingQueue({ enqueue }),
      graphChanged: repositoryChanged,
    }),
  }
  worker = new JobWorker(workerId, pools.system, services, kinds, message.timing, log, repositoryChanged)
  worker.start()
  shutdown = async () => {
    await worker!.stop()
    await vectors.close()
    await pools.close()
    log.flush()
  }
}

self.onmessage = async (event: MessageEvent<ToWorker>) => {
  const message = event.data
  switch (message.type) {
    case 'start':
      try {
        await start(message)
        post({ type: 'started' })
      } catch (error) {
        post({ type: 'failed', error: (error as Error).message ?? String(error) })
      }
      break
    case 'wake':
      worker?.wake()
      break
    case 'cancel':
      worker?.cancel(message.jobId)
      break
    case 'socket': {
      const pending = pendingSockets.get(message.requestId)
      pendingSockets.delete(message.requestId)
      if (message.path) pending?.resolve(message.path)
      else pending?.reject(new Error(message.error ?? 'no socket'))
      break
    }
    case 'stop':
      await shutdown?.()
      post({ type: 'stopped' })
      break
  }
}
