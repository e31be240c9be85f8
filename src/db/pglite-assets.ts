// PGlite looks for its wasm and data files next to its own module, which does not exist inside
// a `bun build --compile` binary. Importing them as files makes the bundler embed them, and
// handing them to PGlite.create explicitly works the same in development and in the binary.
// Compiling the wasm once also makes every further database open faster. The options carry the
// settings every embedded database starts with too.
import { runtime } from '../runtime/index.ts'
import { PGlite } from '@electric-sql/pglite'

export interface PGliteAssets {
  pgliteWasmModule: WebAssembly.Module
  initdbWasmModule: WebAssembly.Module
  fsBundle: Blob
  startParams: string[]
}

/**
 * PostgreSQL's memory settings for an embedded database: one user, one session at a time. PGlite
 * writes all of shared_buffers when it starts, so PostgreSQL's default of 128 MB was most of what
 * each open database cost; a read that misses the buffers comes from the operating system's file
 * cache instead. Given on the command line, they leave the data directory's postgresql.conf as it is.
 */
const MEMORY_SETTINGS = ['shared_buffers=16MB']

let assets: Promise<PGliteAssets> | undefined

export function loadPGliteAssets(): Promise<PGliteAssets> {
  assets ??= (async () => {
    const paths = await runtime.assets()
    const [pglite, initdb, data] = await Promise.all([
      runtime.openFile(paths.pgliteWasm).then((file) => file.arrayBuffer()),
      runtime.openFile(paths.initdbWasm).then((file) => file.arrayBuffer()),
      runtime.openFile(paths.pgliteData).then((file) => file.arrayBuffer()),
    ])
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
      WebAssembly.compile(pglite),
      WebAssembly.compile(initdb),
    ])
    return {
      pgliteWasmModule,
      initdbWasmModule,
      fsBundle: new Blob([data]),
      startParams: [...PGlite.defaultStartParams, ...MEMORY_SETTINGS.flatMap((setting) => ['-c', setting])],
    }
  })()
  return assets
}
