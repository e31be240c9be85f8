// Seeded randomness and mutators for the hostile-input tests. Every run prints its seed; a
// failure names the seed and the case, and FUZZ_SEED=<seed> replays the same cases exactly
// (FUZZ_ROUNDS=<n> multiplies the number of cases, for a longer hunt).

/** The seed of this run: FUZZ_SEED if set, else a fresh one. Printed, so a failure can be replayed. */
export function fuzzSeed(label: string): number {
  const given = process.env.FUZZ_SEED
  const seed = given ? Number(given) >>> 0 : (Math.random() * 2 ** 32) >>> 0
  console.log(`${label}: FUZZ_SEED=${seed}${given ? ' (from the environment)' : ''}`)
  return seed
}

/** How many times the default number of cases to run (FUZZ_ROUNDS, default 1). */
export function fuzzRounds(): number {
  const rounds = Number(process.env.FUZZ_ROUNDS ?? 1)
  return Number.isInteger(rounds) && rounds > 0 ? rounds : 1
}

/** A small deterministic generator (mulberry32): the same seed gives the same sequence. */
export class Rng {
  private state: number

  constructor(seed: number) {
    this.state = seed >>> 0
  }

  /** A generator of its own for case `index`, so that one case can be replayed alone. */
  static forCase(seed: number, index: number): Rng {
    return new Rng(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35))
  }

  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n)
  }

  /** An integer in [min, max]. */
  between(min: number, max: number): number {
    return min + this.int(max - min + 1)
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  bytes(n: number): Uint8Array {
    return Uint8Array.from({ length: n }, () => this.int(256))
  }
}

// ---------------------------------------------------------------------------------------------
// Bytes

/** Bytes that mean something to a JSON scanner, a UTF-8 decoder or a gzip reader. */
const INTERESTING_BYTES = [
  0x22, 0x5c, 0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x00, 0xff, 0xc3, 0x80, 0xed, 0xa0, 0xf0, 0x30, 0x39, 0x2d, 0x65,
  0x20, 0x0a, 0x1f, 0x8b,
]
/** Tokens spliced into JSON text. */
const INTERESTING_TOKENS = [
  'null',
  'true',
  '1e999',
  '-0',
  '123456789012345678901234567890',
  '"\\u0000"',
  '"\\ud800"',
  '{}',
  '[]',
  '"',
  '\\',
  '{"a":',
  ']',
  '}',
  ',',
  ':',
  '\u00e9',
  '\uffff',
  '\\u',
  '"\\',
  '\x00',
]

export type ByteMutation = { name: string; bytes: Uint8Array }

/** One random damage to `input`: flipped bits, a cut, a duplicated or deleted range, inserted bytes. */
export function mutateBytes(rng: Rng, input: Uint8Array): ByteMutation {
  const n = input.length
  const at = () => rng.int(n + 1)
  switch (rng.int(7)) {
    case 0: {
      const out = input.slice()
      const flips = rng.between(1, 8)
      for (let i = 0; i < flips && n > 0; i++) out[rng.int(n)]! ^= 1 << rng.int(8)
      return { name: `flip ${flips} bits`, bytes: out }
    }
    case 1: {
      const cut = at()
      return { name: `truncate at ${cut}`, bytes: input.slice(0, cut) }
    }
    case 2: {
      const start = at()
      const end = Math.min(n, start + rng.between(1, 4096))
      const where = at()
      const times = rng.chance(0.2) ? rng.between(2, 50) : 1
      const copies = Array<Uint8Array>(times).fill(input.subarray(start, end))
      return {
        name: `duplicate [${start}, ${end}) ${times}x at ${where}`,
        bytes: concat([input.subarray(0, where), ...copies, input.subarray(where)]),
      }
    }
    case 3: {
      const start = at()
      const end = Math.min(n, start + rng.between(1, 256))
      return { name: `delete [${start}, ${end})`, bytes: concat([input.subarray(0, start), input.subarray(end)]) }
    }
    case 4: {
      const where = at()
      const inserted = Uint8Array.from({ length: rng.between(1, 16) }, () =>
        rng.chance(0.7) ? rng.pick(INTERESTING_BYTES) : rng.int(256),
      )
      return {
        name: `insert ${inserted.length} bytes at ${where}`,
        bytes: concat([input.subarray(0, where), inserted, input.subarray(where)]),
      }
    }
    case 5: {
      const where = at()
      const token = new TextEncoder().encode(rng.pick(INTERESTING_TOKENS))
      return {
        name: `insert token at ${where}`,
        bytes: concat([input.subarray(0, where), token, input.subarray(where)]),
      }
    }
    default: {
      const where = at()
      const token = new TextEncoder().encode(rng.pick(INTERESTING_TOKENS))
      return {
        name: `overwrite with a token at ${where}`,
        bytes: concat([input.subarray(0, where), token, input.subarray(Math.min(n, where + token.length))]),
      }
    }
  }
}

export function concat(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts))
}

// ---------------------------------------------------------------------------------------------
// JSON values

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/**
 * Raw JSON text a JavaScript value cannot hold (1e999, 30-digit integers, -0, 10,000 levels
 * of nesting): put in a value as a marker string, spliced in by `stringifyWithRaw`.
 */
const RAW = '\u0001raw:'

export function raw(text: string): string {
  return `${RAW}${text}\u0001`
}

export function stringifyWithRaw(value: unknown): string {
  // JSON.stringify writes \u0001 as "\\u0001": the marker is found in its encoded form.
  // undefined (a deleted value) writes nothing.
  return (JSON.stringify(value) ?? '').replace(
    /"\\u0001raw:((?:[^"\\]|\\.)*?)\\u0001"/g,
    (_, text: string) => JSON.parse(`"${text}"`) as string,
  )
}

/** A value of some other type or shape than a field expects; sizes up to `maxString` characters. */
export function hostileValue(rng: Rng, maxString = 100_000): Json {
  switch (rng.int(16)) {
    case 0:
      return null
    case 1:
      return rng.chance(0.5)
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER])
    case 3:
      return raw(
        rng.pick([
          '1e999',
          '-1e999',
          '-0',
          '123456789012345678901234567890',
          '0.000000000000000000000000000001',
          '1E+2',
          '-0.0e-0',
        ]),
      )
    case 4:
      return ''
    case 5:
      return 'x'.repeat(rng.between(1, maxString))
    case 6:
      return rng.pick([
        '\u0000',
        '\ud800',
        '\udfff',
        'é',
        '\u202e',
        '💥',
        '<script>',
        "' OR 1=1 --",
        '../../etc/passwd',
        '%00',
        '${x}',
        '\r\n',
      ])
    case 7:
      return []
    case 8:
      return {}
    case 9:
      return Array.from({ length: rng.between(1, 2000) }, () => rng.int(10))
    case 10:
      return raw(deepNesting(rng.between(10, 20_000), rng.chance(0.5) ? '[' : '{"a":'))
    case 11:
      return { ['__proto__']: { polluted: true }, constructor: { prototype: { polluted: true } } }
    case 12:
      return rng.pick([
        '00000000-0000-0000-0000-000000000000',
        'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
        'not-a-uuid',
        '2026-13-45T99:99:99Z',
        'NaN',
        'Infinity',
        '-1',
      ])
    case 13:
      return raw(`"${rng.pick(['\\ud800', '\\u0000', '\\uDFFF\\uD800', '\\/', '\\x'])}"`)
    case 14:
      return [null, {}, [], 'x', 1]
    default:
      return { unexpected: 'field', nested: { deeper: [1, 2, 3] } }
  }
}

/** `depth` levels of `open` around nothing (or null), all closed. */
export function deepNesting(depth: number, open: '[' | '{"a":'): string {
  const close = open === '[' ? ']' : '}'
  return open.repeat(depth) + (open === '[' ? '' : 'null') + close.repeat(depth)
}

/** Every path to a value inside `value` (the root is []). */
export function valuePaths(
  value: Json,
  path: (string | number)[] = [],
  out: (string | number)[][] = [],
): (string | number)[][] {
  out.push(path)
  if (Array.isArray(value)) value.forEach((item, i) => valuePaths(item, [...path, i], out))
  else if (value !== null && typeof value === 'object')
    for (const key of Object.keys(value)) valuePaths(value[key]!, [...path, key], out)
  return out
}

function parentOf(root: Json, path: (string | number)[]): Json {
  let node = root
  for (const step of path.slice(0, -1)) node = (node as Record<string | number, Json>)[step]!
  return node
}

/**
 * One structural change somewhere in `root` (in place): a value replaced by a hostile one, a
 * key deleted, an unknown key added, an array element duplicated or dropped, a value wrapped.
 * Returns what it did; `root` itself is never replaced (its paths start below it).
 */
export function mutateJson(rng: Rng, root: Json, maxString?: number): string {
  const paths = valuePaths(root).filter((p) => p.length > 0)
  if (paths.length === 0) return 'nothing to mutate'
  const path = rng.pick(paths)
  const parent = parentOf(root, path) as Record<string | number, Json>
  const key = path.at(-1)!
  const where = path.join('.')
  switch (rng.int(6)) {
    case 0:
    case 1:
      parent[key] = hostileValue(rng, maxString)
      return `replace ${where}`
    case 2:
      if (Array.isArray(parent)) parent.splice(key as number, 1)
      else delete parent[key]
      return `delete ${where}`
    case 3: {
      const target = parent[key]
      if (target !== null && typeof target === 'object' && !Array.isArray(target)) {
        target[rng.pick(['unknown', 'extra_field', '__proto__', 'idx', ''])] = hostileValue(rng, maxString)
        return `add a field to ${where}`
      }
      parent[key] = { value: target ?? null }
      return `wrap ${where} in an object`
    }
    case 4:
      if (Array.isArray(parent)) {
        const copies = rng.between(1, 200)
        parent.splice(key as number, 0, ...Array<Json>(copies).fill(structuredClone(parent[key as number]!)))
        return `duplicate ${where} ${copies}x`
      }
      parent[key] = [parent[key]!]
      return `wrap ${where} in an array`
    default: {
      // Through JSON text: String() of an object with its own `constructor` would throw.
      const value = parent[key]
      const text = typeof value === 'string' ? value : JSON.stringify(value)
      parent[key] = rng.chance(0.5) ? text : Number(text)
      return `convert ${where}`
    }
  }
}
