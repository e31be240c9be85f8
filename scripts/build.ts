// Builds the single binary dist/kgs. Worker threads are separate entry points (Bun bundles each
// one into the executable); `root: src` keeps their paths relative to src/workers.ts.
//
// Files only the binary carries go in through src/runtime/build-assets.ts: LanceDB's native
// add-on (the package npm installed for this platform), compressed with zstd (to about a third), as a plain
// embedded file, which the binary unpacks into the user's cache once and loads from there (left
// to Bun, it would be embedded as an add-on, which Bun reads in full at every start); a fresh
// embedded database made by initdb here, so that a first start unpacks it instead of running
// initdb; and the web app, built here (from source it is read from dist/web/, which may not exist
// yet: no module of the source imports it).
import { createHash } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { initdb } from '../src/db/embedded.ts'
import { buildWebApp, WEB_DIST } from './build-web.ts'

const root = join(import.meta.dir, '..')
const outfile = join(root, 'dist', 'kgs')
rmSync(outfile, { force: true })

const scope = join(root, 'node_modules', '@lancedb')
const addonPackages = readdirSync(scope).filter((name) => name.startsWith('lancedb-'))
if (addonPackages.length !== 1)
  throw new Error(
    `expected one LanceDB add-on package for this platform in ${scope}, found ${addonPackages.join(', ') || 'none'}`,
  )
const addonPackage = `@lancedb/${addonPackages[0]}`
const addonDir = join(scope, addonPackages[0]!)
const addon = readdirSync(addonDir).find((name) => name.endsWith('.node'))
if (!addon) throw new Error(`${addonPackage} has no .node file`)

const scratch = mkdtempSync(join(tmpdir(), 'kgs-build-'))
const library = await Bun.file(join(addonDir, addon)).bytes()
const packedAddon = join(scratch, `${addon}.zst`)
// Level 3: within a few percent of level 12's size, in a seventh of its time.
await Bun.write(packedAddon, Bun.zstdCompressSync(library, { level: 3 }))
const lancedb = {
  name: `lancedb-${createHash('sha256').update(library).digest('hex').slice(0, 16)}.node`,
  size: library.length,
}
const template = join(scratch, 'template')
await initdb(template)
const templateArchive = join(scratch, 'pglite-template.tar.gz')
// Its entries by name (not "."), which Bun.Archive reads back as a plain tree.
const tar = Bun.spawnSync(['tar', '-czf', templateArchive, '-C', template, ...readdirSync(template)], {
  stderr: 'inherit',
})
if (tar.exitCode !== 0) throw new Error('tar failed to pack the embedded database template')

const buildAssets = `import lancedb from ${JSON.stringify(packedAddon)} with { type: 'file' }
import pgliteTemplate from ${JSON.stringify(templateArchive)} with { type: 'file' }
import webAppJs from ${JSON.stringify(join(WEB_DIST, 'app.js'))} with { type: 'file' }
import webAppCss from ${JSON.stringify(join(WEB_DIST, 'app.css'))} with { type: 'file' }
export const buildAssets = { lancedb: { file: lancedb, ...${JSON.stringify(lancedb)} }, pgliteTemplate, webApp: { webAppJs, webAppCss } }
`
await buildWebApp()
const result = await Bun.build({
  entrypoints: [
    join(root, 'src/main.ts'),
    join(root, 'src/initdb-thread.ts'),
    join(root, 'src/job-thread.ts'),
    join(root, 'src/hasher-thread.ts'),
    join(root, 'src/gzip-thread.ts'),
  ],
  root: join(root, 'src'),
  files: {
    [join(root, 'src/runtime/build-assets.ts')]: buildAssets,
  },
  external: [addonPackage],
  compile: { outfile },
  minify: { syntax: true, whitespace: true },
  sourcemap: 'inline',
})
rmSync(scratch, { recursive: true, force: true })
if (!result.success) {
  for (const message of result.logs) console.error(message)
  process.exit(1)
}
console.log(`built ${outfile}`)
