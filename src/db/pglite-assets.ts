// PGlite looks for its wasm and data files next to its own module, which does not exist inside
// a `bun build --compile` binary. Importing them as files makes the bundler embed them, and
// handing them to PGlite.create explicitly works the same in development and in the binary.
// Compiling the wasm once also makes every further database open faster.
import pgliteWasmPath from '../../node_modules/@electric-sql/pglite/dist/pglite.wasm' with { type: 'file' }
import initdbWasmPath from '../../node_modules/@electric-sql/pglite/dist/initdb.wasm' with { type: 'file' }
import fsBundlePath from '../../node_modules/@electric-sql/pglite/dist/pglite.data' with { type: 'file' }

export interface PGliteAssets {
  pgliteWasmModule: WebAssembly.Module
  initdbWasmModule: WebAssembly.Module
  fsBundle: Blob
}

let assets: Promise<PGliteAssets> | undefined

export function loadPGliteAssets(): Promise<PGliteAssets> {
  assets ??= (async () => {
    const [pglite, initdb, data] = await Promise.all([
      Bun.file(pgliteWasmPath).arrayBuffer(),
      Bun.file(initdbWasmPath).arrayBuffer(),
      Bun.file(fsBundlePath).arrayBuffer(),
    ])
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([WebAssembly.compile(pglite), WebAssembly.compile(initdb)])
    return { pgliteWasmModule, initdbWasmModule, fsBundle: new Blob([data]) }
  })()
  return assets
}
