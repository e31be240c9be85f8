// Password hashes move between runtimes: a hash Bun wrote verifies on Deno (hash-wasm) and the
// other way round, both argon2id PHC strings of the cost asked for (the default, m=19 MiB, t=2,
// p=1, and another row of OWASP's table), so a re-hash on either runtime writes the same parameters.
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { parseEnv, type PasswordCost } from '../../src/config.ts'
import { runtime } from '../../src/runtime/index.ts'

const ROOT = join(import.meta.dir, '..', '..')
const phc = (cost: PasswordCost) =>
  new RegExp(`^\\$argon2id\\$v=19\\$m=${cost.memoryKiB},t=${cost.timeCost},p=1\\$[A-Za-z0-9+/]+\\$[A-Za-z0-9+/]+$`)

for (const env of [{}, { PASSWORD_HASH_MEMORY: '12', PASSWORD_HASH_TIME: '3' }]) {
  const cost = parseEnv(env).passwordCost
  test(`a Bun hash verifies on Deno and a Deno hash on Bun (m=${cost.memoryKiB} KiB, t=${cost.timeCost})`, async () => {
    const password = 'correct horse battery'
    const bunHash = await runtime.hashPassword(password, cost)
    expect(bunHash).toMatch(phc(cost))
    // Deno verifies Bun's hash (right and wrong password) and prints a hash of its own at the same cost.
    const script = `import { runtime } from './src/runtime/index.ts'
const [password, hash, cost] = Deno.args
console.log(JSON.stringify({ name: runtime.name, right: await runtime.verifyPassword(password, hash), wrong: await runtime.verifyPassword(password + '!', hash), hash: await runtime.hashPassword(password, JSON.parse(cost)) }))`
    const child = Bun.spawnSync(
      [join(ROOT, 'node_modules', '.bin', 'deno'), 'eval', '--ext=ts', script, password, bunHash, JSON.stringify(cost)],
      { cwd: ROOT, stderr: 'pipe' },
    )
    expect(child.stderr.toString()).toBe('')
    const deno = JSON.parse(child.stdout.toString()) as { name: string; right: boolean; wrong: boolean; hash: string }
    expect(deno).toMatchObject({ name: 'deno', right: true, wrong: false })
    expect(deno.hash).toMatch(phc(cost))
    expect(await runtime.verifyPassword(password, deno.hash)).toBe(true)
    expect(await runtime.verifyPassword(`${password}!`, deno.hash)).toBe(false)
  })
}
