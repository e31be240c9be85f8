// The runtime kgs runs on, chosen once at start-up: Deno when its global is there, else Bun.
// Only src/runtime/ touches `Bun` or `Deno` (.ci/run checks it). No top-level await here: every
// module and worker imports this one, and Bun could leave a start-up waiting on it for good.
import { runtime as bun } from './bun.ts'
import { runtime as deno } from './deno.ts'
import type { Runtime } from './types.ts'

export type { Assets, Runtime, S3Client, S3File } from './types.ts'

export const runtime: Runtime = 'Deno' in globalThis ? deno : bun
