// The bundle codec on Deno: `kgs bundle verify|inspect|canonical` run by `deno run -A src/main.ts`
// on bundles generated here (with Bun): one past 16 MiB decompressed (where the reader asks the
// runtime for a collection, which failed on Deno before src/runtime/), one truncated, one that is
// not gzip. Each must give exactly the answer Bun's run gives. Exit 1 on the first difference.
//   bun scripts/deno-codec.ts
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateBundle } from './gen-bundle.ts'

const root = join(import.meta.dir, '..')
const main = join(root, 'src', 'main.ts')
const deno = [join(root, 'node_modules', '.bin', 'deno'), 'run', '-A', main]
const bun = [process.execPath, main]
const dir = mkdtempSync(join(tmpdir(), 'kgs-deno-codec-'))

const big = await generateBundle(join(dir, 'big.json.gz'), { facts: 6000, dimensions: 384, seed: 3 })
if (big.bytes <= 16 * 1024 * 1024) throw new Error(`the big bundle decompresses to only ${big.bytes} bytes`)
const bytes = readFileSync(big.path)
writeFileSync(join(dir, 'truncated.json.gz'), bytes.subarray(0, bytes.length >> 1))
writeFileSync(join(dir, 'plain.json'), '{"metadata": {}}')

const run = (command: string[], args: string[]) => {
  const child = Bun.spawnSync([...command, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir },
  })
  return { code: child.exitCode, out: child.stdout.toString(), err: child.stderr.toString() }
}
let failures = 0
const expectSame = (args: string[], expected: { code: number; err?: RegExp }) => {
  const onDeno = run(deno, args)
  const onBun = run(bun, args)
  const ok =
    onDeno.code === expected.code &&
    (expected.err === undefined || expected.err.test(onDeno.err + onDeno.out)) &&
    onDeno.code === onBun.code &&
    onDeno.out === onBun.out &&
    onDeno.err === onBun.err
  console.log(`${ok ? 'ok  ' : 'FAIL'} kgs ${args.join(' ')} (deno: exit ${onDeno.code})`)
  if (!ok) {
    failures++
    console.log(`  deno: ${onDeno.code} ${onDeno.out}${onDeno.err}\n  bun:  ${onBun.code} ${onBun.out}${onBun.err}`)
  }
}

expectSame(['bundle', 'verify', 'big.json.gz'], { code: 0, err: new RegExp(`^ok ${big.sha256} big.json.gz`) })
expectSame(['bundle', 'inspect', '--json', 'big.json.gz'], { code: 0 })
expectSame(['bundle', 'canonical', 'big.json.gz'], { code: 0 })
expectSame(['bundle', 'verify', 'truncated.json.gz'], { code: 1, err: /gzip: truncated/ })
expectSame(['bundle', 'verify', 'plain.json'], { code: 1, err: /gzip: not a gzip file/ })
rmSync(dir, { recursive: true, force: true })
if (failures > 0) process.exit(1)
