// Builds the web app (src/web/) into dist/web/app.js and dist/web/app.css: one minified bundle
// each, which scripts/build.ts embeds in the binary and src/http/web-app.ts serves.
// `npm start`, `npm test` and `npm run build` run it first, and `kgs serve` from source (through
// src/runtime/bun.ts); the tests' preload runs it when the sources are newer than the bundle.
// `--if-stale` builds only then.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
const source = join(root, 'src', 'web')
export const WEB_DIST = join(root, 'dist', 'web')
const OUTPUTS = ['app.js', 'app.css']

const newest = (dir: string): number =>
  Math.max(
    ...readdirSync(dir, { withFileTypes: true }).map((entry) =>
      entry.isDirectory() ? newest(join(dir, entry.name)) : statSync(join(dir, entry.name)).mtimeMs,
    ),
  )

/** Whether dist/web is missing a file or older than a source of the app. */
function stale(): boolean {
  const paths = OUTPUTS.map((name) => join(WEB_DIST, name))
  if (!paths.every(existsSync)) return true
  return Math.min(...paths.map((path) => statSync(path).mtimeMs)) < newest(source)
}

/** The app's first page as a browser fetches it: its JavaScript and CSS, gzip, in bytes (what the budget of docs/app.md counts). */
export function firstPageGzipBytes(): number {
  return OUTPUTS.reduce((sum, name) => sum + Bun.gzipSync(new Uint8Array(readFileSync(join(WEB_DIST, name)))).length, 0)
}

/** Answers whether it built (false: `ifStale` and the bundle is up to date). */
export async function buildWebApp({ ifStale = false } = {}): Promise<boolean> {
  if (ifStale && !stale()) return false
  // Built beside the output and renamed into place, so that a server reading the files never sees half of one.
  const scratch = join(root, 'dist', `web-${process.pid}`)
  rmSync(scratch, { recursive: true, force: true })
  const result = await Bun.build({
    entrypoints: [join(source, 'app.tsx')],
    outdir: scratch,
    target: 'browser',
    format: 'esm',
    minify: true,
    naming: '[name].[ext]',
    define: { 'process.env.NODE_ENV': '"production"' },
  })
  if (!result.success) {
    for (const message of result.logs) console.error(message)
    throw new Error('the web app did not build')
  }
  mkdirSync(WEB_DIST, { recursive: true })
  for (const name of OUTPUTS) renameSync(join(scratch, name), join(WEB_DIST, name))
  rmSync(scratch, { recursive: true, force: true })
  return true
}

if (import.meta.main) {
  const built = await buildWebApp({ ifStale: process.argv.includes('--if-stale') })
  console.log(
    `${built ? `built ${WEB_DIST}` : `${WEB_DIST} is up to date`}: the first page's JavaScript and CSS, ${(firstPageGzipBytes() / 1024).toFixed(1)} KB gzip`,
  )
}
