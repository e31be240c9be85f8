// ARCHITECTURE.md and the tree cannot drift apart: its layer table names every top-level folder and
// root file of src/, and nothing that is gone; each route factory and app piece takes one options object.
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '..')
const SRC = join(ROOT, 'src')
const WEB = join(SRC, 'web')

/** The entries of src/ the layer table names: `src/db/`, `accounts/`, `main.ts`, `src/types.d.ts`, … */
function namedInLayerTable(): Set<string> {
  const text = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8')
  const table = text.slice(text.indexOf('| Layer |'), text.indexOf('Rules that follow from it:'))
  const named = new Set<string>()
  for (const [, span] of table.matchAll(/`([^`]+)`/g)) {
    const entry = /^(?:src\/)?([a-z][a-z0-9.-]*)(\/|\.tsx?)$/.exec(span!)
    if (entry && span !== 'src/') named.add(entry[2] === '/' ? entry[1]! : entry[1]! + entry[2])
  }
  return named
}

function filesBelow(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesBelow(join(dir, entry.name)) : [join(dir, entry.name)],
  )
}

describe('ARCHITECTURE.md', () => {
  const named = namedInLayerTable()
  const present = new Set(readdirSync(SRC))

  test('its layer table names every top-level folder and root file of src/', () => {
    expect([...present].filter((entry) => !named.has(entry)).sort()).toEqual([])
  })

  test('its layer table names nothing that is not in src/', () => {
    expect([...named].filter((entry) => !present.has(entry)).sort()).toEqual([])
  })
})

/** The pieces of the app besides the route factories (`…Routes`) that the root builds from what it knows. */
const APP_PIECES = ['swaggerUi', 'webApp']

describe('route factories', () => {
  test('each one the composition root mounts, and each app piece, takes one options object', () => {
    const factory = new RegExp(`\\b(\\w+Routes|${APP_PIECES.join('|')})\\(`, 'g')
    const mounted = new Set([...readFileSync(join(SRC, 'app.ts'), 'utf8').matchAll(factory)].map((match) => match[1]!))
    const positional: string[] = []
    for (const file of filesBelow(SRC).filter((path) => path.endsWith('.ts') && !path.startsWith(WEB + '/'))) {
      for (const [, name, parameters] of readFileSync(file, 'utf8').matchAll(/export function (\w+)\(([^)]*)\)/g)) {
        if (mounted.delete(name!) && !/^\{[^}]*\}: \w+Options$|^options: \w+Options$/.test(parameters!.trim()))
          positional.push(`${relative(ROOT, file)}: ${name}(${parameters})`)
      }
    }
    expect(positional).toEqual([])
    // Each name src/app.ts calls was found where it is declared.
    expect([...mounted]).toEqual([])
  })
})
