// Builds the single binary dist/kgs. Worker threads are separate entry points (Bun bundles each
// one into the executable); `root: src` keeps their paths relative to src/workers.ts.
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { buildWebApp } from './build-web.ts'

const root = join(import.meta.dir, '..')
const outfile = join(root, 'dist', 'kgs')
rmSync(outfile, { force: true })
// The web app's files first: the binary embeds them.
await buildWebApp()
const result = await Bun.build({
  entrypoints: [join(root, 'src/main.ts'), join(root, 'src/initdb-thread.ts'), join(root, 'src/job-thread.ts'), join(root, 'src/hasher-thread.ts'), join(root, 'src/gzip-thread.ts')],
  root: join(root, 'src'),
  compile: { outfile },
  minify: { syntax: true, whitespace: true },
  sourcemap: 'inline',
})
if (!result.success) {
  for (const message of result.logs) console.error(message)
  process.exit(1)
}
console.log(`built ${outfile}`)
