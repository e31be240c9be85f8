// `npm start` as the README runs it: stopping npm stops kgs (npm forwards the signal, and kgs runs
// in the place of npm's shell to receive it), so the next start finds its data directory free.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND, instanceEnvironment } from './helpers/backend.ts'
import { startServerProcess } from './helpers/server.ts'
import { DRAIN_TIMEOUT_MS } from '../src/server.ts'
import { rejected } from './helpers/promises.ts'

const NPM_START = ['npm', 'start', '--silent']

describe(`npm start (${BACKEND})`, () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  beforeAll(async () => {
    instance = await instanceEnvironment()
  })
  afterAll(() => instance.cleanup())

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`${signal} to npm stops kgs, and the next start works`, async () => {
      const server = await startServerProcess(instance.env, 'info', NPM_START)
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
      expect(await server.stop(signal)).not.toBe(null)
      // The output closes only once kgs, which shares it, has exited too; a kgs left running
      // (re-parented when npm's shell died) keeps it open.
      let timer: Timer | undefined
      const stillRunning = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new Error(`kgs still running ${DRAIN_TIMEOUT_MS} ms after npm was stopped:\n${server.output()}`)),
          DRAIN_TIMEOUT_MS,
        )
      })
      await Promise.race([server.outputClosed, stillRunning]).finally(() => clearTimeout(timer))
      expect(server.output()).toContain(`"msg":"shutting down","signal":"${signal}"`)
      expect(server.output()).toContain('"msg":"stopped"')
      expect(await rejected(fetch(`${server.url}/healthz`))).toThrow()
    })
  }
})
