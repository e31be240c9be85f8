// The vocabulary, random numbers and proportions shared by the synthetic-graph generators:
// scripts/gen-graph.ts (straight into a repository's database) and scripts/gen-bundle.ts
// (straight into a bundle file). Both are deterministic for a seed.

export interface GraphSize {
  sources: number
  facts: number
  concepts: number
  summaries: number
  syntheses: number
  investigations: number
  reports: number
  images: number
}

/** Realistic proportions: per 20 facts one source, per 10 one concept and one summary, per 40 one image, per 100 one synthesis, per 200 one investigation and one report. */
export function graphSize(facts: number): GraphSize {
  const at = (divisor: number) => Math.max(1, Math.ceil(facts / divisor))
  return {
    sources: at(20),
    facts,
    concepts: at(10),
    summaries: at(10),
    syntheses: at(100),
    investigations: at(200),
    reports: at(200),
    images: at(40),
  }
}

export const WORDS = (
  'acid alloy amplitude atom basin battery biome boundary carbon catalyst cell channel climate cloud coastal compound conductor ' +
  'coral crystal current delta density diffusion drought electron enzyme erosion estuary field flux forest fossil friction gene ' +
  'glacier gradient graphite habitat heat helium hydrogen ice ion isotope kelp lattice layer lens magma magnet mantle membrane ' +
  'methane mineral molecule monsoon neuron nitrogen nucleus ocean orbit oxide oxygen ozone particle permafrost photon plankton ' +
  'plasma plate pollen polymer pressure protein pulse quartz radiation reef resin river rock salinity sediment seed shelf signal ' +
  'silicon soil solar spectrum spore storm strain sulfur surface tide tissue turbine vapor velocity virus voltage wave wetland wind'
).split(' ')
export const VERBS =
  'absorbs accelerates alters amplifies binds blocks carries changes controls cools dampens degrades drives emits enhances forms heats inhibits limits lowers raises reduces reflects regulates releases shields slows stabilizes stores transports'.split(
    ' ',
  )
export const QUALIFIERS = [
  'at high pressure',
  'in cold water',
  'during summer',
  'under load',
  'at night',
  'in dry soil',
  'near the surface',
  'over decades',
  'in the lab',
  'at sea level',
]

/** mulberry32: small, fast, deterministic. */
export function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Deterministic UUIDs (v4-shaped) drawn from a stream of random numbers, so two runs write the same graph. */
export function uuids(next: () => number): () => string {
  return () => {
    const hex = Array.from({ length: 32 }, () => Math.floor(next() * 16).toString(16)).join('')
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${'89ab'[Math.floor(next() * 4)]}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
  }
}

// Stateless variants, for generators that derive every row from its index instead of walking
// one random stream (so any row can be made again without the ones before it).

/** A bijection on 32-bit integers (Chris Wellons' lowbias32): distinct inputs, distinct outputs. */
export function mix32(x: number): number {
  x = (x ^ (x >>> 16)) >>> 0
  x = Math.imul(x, 0x7feb352d) >>> 0
  x = (x ^ (x >>> 15)) >>> 0
  x = Math.imul(x, 0x846ca68b) >>> 0
  return (x ^ (x >>> 16)) >>> 0
}

/** A 32-bit key for (seed, kind); kinds are small integers naming a row kind. */
export function kindKey(seed: number, kind: number): number {
  return mix32((mix32(seed >>> 0) + Math.imul(kind + 1, 0x9e3779b9)) >>> 0)
}

/** The random stream of one row: mulberry32 seeded from (seed, kind, index). */
export function rowRandom(seed: number, kind: number, index: number): () => number {
  return random(mix32((index ^ kindKey(seed, kind)) >>> 0))
}
