// The concepts of a source: the noun phrases that recur among its facts and the named entities
// (runs of proper nouns, acronyms) that appear in them, normalized to one name each, with the
// other ways the source writes them as aliases. Works on tagged words (builtin.ts makes them
// with wink-nlp), so the rules here are plain functions of the words and their parts of speech.

/** A word of a fact as the tagger saw it; a hyphenated compound (`Write-Ahead`) is one word. */
export interface Word {
  text: string
  pos: string
  /** The tagger's lemma, consulted to make a plural head singular. */
  lemma: string
  /** For a compound, the part of speech of its last part; else `pos`. */
  headPos: string
}

export interface ConceptLimits {
  /** Concepts kept per source, the most mentioned first. */
  maxConcepts: number
  /** Words in a noun phrase; a longer one keeps its last words (the head and what is nearest it). */
  maxPhraseWords: number
  /** A noun phrase becomes a concept when this many facts mention it (an entity needs one). */
  minFacts: number
  /** Aliases kept per concept. */
  maxAliases: number
}

export interface FoundConcept {
  canonical_name: string
  aliases: string[]
  /** Positions of the facts that mention it, ascending. */
  facts: number[]
}

// Words of a phrase that add no meaning to its name, dropped from its front; the determiners
// and possessives are dropped by the grammar already (they are not nouns or adjectives).
const VAGUE_MODIFIERS = new Set(
  'other same different various many several few more most much such certain own whole entire first last next previous only particular specific new each every all some any'.split(
    ' ',
  ),
)
// Nouns too general to name a concept alone.
const GENERIC_NOUNS = new Set(
  'default way thing things part parts lot kind kinds type types number example examples time times use case cases fact point one ones place end side form level set sort order area result results reason problem question answer idea people person someone something anything everything nothing day year week month today page section chapter figure table item list see etc data information'.split(
    ' ',
  ),
)

const MODIFIER_POS = new Set(['ADJ', 'NOUN', 'PROPN'])
const NOUN_POS = new Set(['NOUN', 'PROPN'])
const ACRONYM = /^[A-Z][A-Za-z0-9]*[A-Z0-9]s?$/

function isAcronym(text: string): boolean {
  return ACRONYM.test(text) && text.length <= 10 && (text.match(/[A-Z]/g) ?? []).length >= 2
}

function isNounish(word: Word): boolean {
  return NOUN_POS.has(word.pos) || (word.pos === 'COMPOUND' && NOUN_POS.has(word.headPos))
}

function isModifier(word: Word): boolean {
  return MODIFIER_POS.has(word.pos) || word.pos === 'COMPOUND'
}

/** A word of a name as the concept writes it: proper nouns and words with inner capitals as written, others lower-cased. */
function nameWord(word: Word): string {
  return word.pos === 'PROPN' || /[A-Z]/.test(word.text.slice(1)) ? word.text : word.text.toLowerCase()
}

/**
 * The singular of a plural head noun, when it is safe: the tagger's lemma and the regular rule
 * agree (`files` → `file`, `policies` → `policy`), so irregular or doubtful words (`data`,
 * `series`, `indices`) stay as written.
 */
function singular(word: string, lemma: string): string {
  const one = regularSingular(word.toLowerCase())
  if (one === undefined || one !== lemma.toLowerCase()) return word
  return word.endsWith('ies') || word.endsWith('IES') ? `${word.slice(0, -3)}y` : word.slice(0, one.length)
}

/** The singular of a lower-case word by the regular rules of English plurals, if it looks plural. */
function regularSingular(lower: string): string | undefined {
  if (/[^aeiou]ies$/.test(lower) && lower.length > 4) return `${lower.slice(0, -3)}y`
  if (/(?:ss|x|z|ch|sh)es$/.test(lower)) return lower.slice(0, -2)
  if (/[^su]s$/.test(lower) && lower.length > 3) return lower.slice(0, -1)
  return undefined
}

function phraseName(words: readonly Word[]): string {
  const names = words.map(nameWord)
  const head = words[words.length - 1]!
  if (head.pos === 'NOUN') names[names.length - 1] = singular(names[names.length - 1]!, head.lemma)
  return names.join(' ')
}

function surface(words: readonly Word[]): string {
  return words.map((word) => word.text).join(' ')
}

interface Mention {
  key: string
  name: string
  surface: string
  entity: boolean
}

/** The noun phrases and entities of one fact's words. */
function mentionsOf(words: readonly Word[], limits: ConceptLimits): Mention[] {
  const found: Mention[] = []
  const add = (span: readonly Word[], entity: boolean) => {
    const name = phraseName(span)
    if (!/\p{L}/u.test(name)) return
    if (span.length === 1 && (GENERIC_NOUNS.has(name.toLowerCase()) || name.length < 2)) return
    found.push({ key: name.toLowerCase(), name, surface: surface(span), entity })
  }
  let i = 0
  while (i < words.length) {
    if (!isModifier(words[i]!)) {
      i++
      continue
    }
    let end = i
    while (end < words.length && isModifier(words[end]!)) end++
    // The phrase ends at its last noun: trailing adjectives belong to what follows.
    let stop = end
    while (stop > i && !isNounish(words[stop - 1]!)) stop--
    let start = i
    while (stop - start > 1 && VAGUE_MODIFIERS.has(words[start]!.text.toLowerCase())) start++
    start = Math.max(start, stop - limits.maxPhraseWords)
    if (stop > start) {
      const span = words.slice(start, stop)
      const capitalisedInside = (run: readonly Word[]) => run.some((word) => /[A-Z]/.test(word.text.slice(1)))
      const proper = (word: Word) => word.pos === 'PROPN' || (word.pos === 'COMPOUND' && /^\p{Lu}/u.test(word.text))
      const allProper = span.every(proper)
      // A capital at the start of a sentence says little: there a proper noun alone is an entity
      // only when written with capitals inside (`PostgreSQL`, `WAL`); a run of them (`Diego Ongaro`) is one.
      add(span, allProper && (start > 0 || span.length > 1 || capitalisedInside(span)))
      // Runs of proper nouns inside a longer phrase are entities of their own (`WAL` in `WAL records`).
      if (!allProper) {
        let j = 0
        while (j < span.length) {
          if (span[j]!.pos !== 'PROPN') {
            j++
            continue
          }
          let k = j
          while (k < span.length && span[k]!.pos === 'PROPN') k++
          const run = span.slice(j, k)
          add(run, start + j > 0 || run.length > 1 || capitalisedInside(run))
          j = k
        }
      }
    }
    i = end
  }
  return found
}

/**
 * `Long Form (LF)`: the acronym in parentheses and the words before it whose initials spell it
 * (each part of a hyphenated word counts), as [acronym, long form].
 */
function acronymsOf(words: readonly Word[]): [Word, Word[]][] {
  const found: [Word, Word[]][] = []
  for (let i = 1; i + 2 < words.length; i++) {
    if (words[i]!.text !== '(' || words[i + 2]?.text !== ')') continue
    const acronym = words[i + 1]!
    if (!isAcronym(acronym.text)) continue
    const letters = acronym.text.replace(/s$/, '').replace(/[^A-Z0-9]/g, '')
    let initials = ''
    let start = i
    while (start > 0 && initials.length < letters.length && isModifier(words[start - 1]!)) {
      start--
      initials =
        words[start]!.text.split('-')
          .map((part) => part.charAt(0).toUpperCase())
          .join('') + initials
    }
    if (initials === letters) found.push([acronym, words.slice(start, i)])
  }
  return found
}

interface Candidate {
  name: string
  names: Map<string, number>
  surfaces: string[]
  mentions: number
  entity: boolean
  facts: Set<number>
  /** Its rank among the candidates in the order the source first mentions them. */
  first: number
}

/**
 * The tagger takes a capitalised word at the start of a sentence for a proper noun. Where the
 * source writes it in lower case as a noun elsewhere (itself or its singular), it is that noun.
 */
function commonAtStart(facts: readonly (readonly Word[])[]): Word[][] {
  const nouns = new Set<string>()
  for (const words of facts)
    for (let i = 1; i < words.length; i++)
      if (words[i]!.pos === 'NOUN' && /^\p{Ll}/u.test(words[i]!.text)) nouns.add(words[i]!.text)
  return facts.map((words) => {
    const first = words[0]
    if (first?.pos !== 'PROPN' || /\p{Lu}/u.test(first.text.slice(1))) return [...words]
    const lower = first.text.toLowerCase()
    const one = regularSingular(lower)
    if (one !== undefined && nouns.has(one))
      return [{ ...first, pos: 'NOUN', headPos: 'NOUN', lemma: one }, ...words.slice(1)]
    if (nouns.has(lower)) return [{ ...first, pos: 'NOUN', headPos: 'NOUN' }, ...words.slice(1)]
    return [...words]
  })
}

/** The concepts of a source's facts, given each fact's words in the facts' order. */
export function findConcepts(tagged: readonly (readonly Word[])[], limits: ConceptLimits): FoundConcept[] {
  const facts = commonAtStart(tagged)
  // Acronyms first, over every fact: a mention of `WAL` anywhere is one of the Write-Ahead Log.
  const aliasOf = new Map<string, { key: string; alias: string }>()
  const longForms = new Map<string, Word[]>()
  for (const words of facts)
    for (const [acronym, long] of acronymsOf(words)) {
      const key = phraseName(long).toLowerCase()
      const acronymKey = acronym.text.toLowerCase()
      if (!aliasOf.has(acronymKey) && acronymKey !== key) {
        aliasOf.set(acronymKey, { key, alias: acronym.text })
        // A plural acronym (`LLMs`) is written singular as well, and a noun phrase's head is made singular.
        if (acronymKey.endsWith('s')) aliasOf.set(acronymKey.slice(0, -1), { key, alias: acronym.text })
        longForms.set(key, long)
      }
    }
  const candidates = new Map<string, Candidate>()
  facts.forEach((words, factIndex) => {
    const seen = new Set<string>()
    for (const mention of mentionsOf(words, limits)) {
      const alias = aliasOf.get(mention.key)
      const key = alias?.key ?? mention.key
      let candidate = candidates.get(key)
      if (!candidate) {
        candidate = {
          name: '',
          names: new Map(),
          surfaces: [],
          mentions: 0,
          entity: false,
          facts: new Set(),
          first: candidates.size,
        }
        candidates.set(key, candidate)
      }
      const surfaceForm = alias ? alias.alias : mention.surface
      if (!candidate.surfaces.includes(surfaceForm)) candidate.surfaces.push(surfaceForm)
      // The acronym beside its long form (`Write-Ahead Log (WAL)`) is one mention, the long form's.
      if (seen.has(key) && alias) continue
      seen.add(key)
      candidate.mentions++
      candidate.facts.add(factIndex)
      candidate.entity ||= mention.entity || longForms.has(key)
      if (!alias) candidate.names.set(mention.name, (candidate.names.get(mention.name) ?? 0) + 1)
    }
  })
  const kept: Candidate[] = []
  for (const [key, candidate] of candidates) {
    if (candidate.names.size === 0) {
      const long = longForms.get(key)
      if (!long) continue
      candidate.names.set(phraseName(long), 1)
    }
    if (candidate.facts.size < limits.minFacts && !candidate.entity) continue
    // The name most often written, the first written on a tie.
    let best = ''
    let bestCount = 0
    for (const [name, count] of candidate.names)
      if (count > bestCount) {
        best = name
        bestCount = count
      }
    candidate.name = best
    kept.push(candidate)
  }
  kept.sort((a, b) => b.mentions - a.mentions || a.first - b.first)
  return kept
    .slice(0, limits.maxConcepts)
    .sort((a, b) => a.first - b.first)
    .map((candidate) => {
      const folded = new Set([candidate.name.toLowerCase()])
      const aliases: string[] = []
      for (const form of candidate.surfaces) {
        if (aliases.length >= limits.maxAliases) break
        if (folded.has(form.toLowerCase())) continue
        folded.add(form.toLowerCase())
        aliases.push(form)
      }
      return {
        canonical_name: candidate.name,
        aliases,
        facts: [...candidate.facts].sort((a, b) => a - b),
      }
    })
}
