// PGlite looks for its wasm and data files next to its own module, which does not exist inside
// a `bun build --compile` binary. Importing them as files makes the bundler embed them, and
// handing them to PGlite.create explicitly works the same in development and in the binary.
// Compiling the wasm once also makes every further database open faster.
import { runtime } from '../runtime/index.ts'

export interface PGliteAssets {
  pgliteWasmModule: WebAssembly.Module
  initdbWasmModule: WebAssembly.Module
  fsBundle: Blob
}

let assets: Promise<PGliteAssets> | undefined

export function loadPGliteAssets(): Promise<PGliteAssets> {
  assets ??= (async () => {
    const paths = await runtime.assets()
    const [pglite, initdb, data] = await Promise.all([
      runtime.openFile(paths.pgliteWasm).then((file) => file.arrayBuffer()),
      runtime.openFile(paths.initdbWasm).then((file) => file.arrayBuffer()),
      runtime.openFile(paths.pgliteData).then((file) => file.arrayBuffer()),
    ])
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([WebAssembly.compile(pglite), WebAssembly.compile(initdb)])
    return { pgliteWasmModule, initdbWasmModule, fsBundle: new Blob([data]) }
  })()
  return assets
}
