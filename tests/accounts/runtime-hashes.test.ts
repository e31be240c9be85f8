// Password hashes move between runtimes: a hash Bun wrote verifies on Deno (hash-wasm) and the
// other way round, both argon2id PHC strings with the same parameters (m=64 MiB, t=2, p=1).
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { runtime } from '../../src/runtime/index.ts'

const ROOT = join(import.meta.dir, '..', '..')
const PARAMETERS = /^\$argon2id\$v=19\$m=65536,t=2,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/

test('a Bun hash verifies on Deno and a Deno hash on Bun', async () => {
  const password = 'correct horse battery'
  const bunHash = await runtime.hashPassword(password)
  expect(bunHash).toMatch(PARAMETERS)
  // Deno verifies Bun's hash (right and wrong password) and prints a hash of its own.
  const script = `import { runtime } from './src/runtime/index.ts'
const [password, hash] = Deno.args
console.log(JSON.stringify({ name: runtime.name, right: await runtime.verifyPassword(password, hash), wrong: await runtime.verifyPassword(password + '!', hash), hash: await runtime.hashPassword(password) }))`
  const child = Bun.spawnSync([join(ROOT, 'node_modules', '.bin', 'deno'), 'eval', '--ext=ts', script, password, bunHash], { cwd: ROOT, stderr: 'pipe' })
  expect(child.stderr.toString()).toBe('')
  const deno = JSON.parse(child.stdout.toString()) as { name: string; right: boolean; wrong: boolean; hash: string }
  expect(deno).toMatchObject({ name: 'deno', right: true, wrong: false })
  expect(deno.hash).toMatch(PARAMETERS)
  expect(await runtime.verifyPassword(password, deno.hash)).toBe(true)
  expect(await runtime.verifyPassword(`${password}!`, deno.hash)).toBe(false)
})
