// The built-in extractor: offline, deterministic, and extractive. Its facts are the source's own
// declarative sentences and its concepts the noun phrases and entities that recur in them
// (docs/extract.md). wink-nlp with its English model segments and tags the text; everything else
// is the plain rules of markdown.ts, concepts.ts and the sentence filter below.
import winkNLP, { type Document, type WinkMethods } from 'wink-nlp'
import model from 'wink-eng-lite-web-model'
import { normalizeFactText } from '../graph/rules.ts'
import { type ConceptLimits, findConcepts, type Word } from './concepts.ts'
import {
  type ExtractChunk,
  type ExtractedConcept,
  type ExtractedFact,
  type Extraction,
  type ExtractOptions,
  type Extractor,
  promptsetHash,
} from './extractor.ts'
import { proseBlocks } from './markdown.ts'
import { builtinSummaries } from './summaries.ts'

export interface BuiltinLimits extends ConceptLimits {
  /** Facts kept per source, in the document's order; the chunks after the last one are not read. */
  maxFacts: number
  /** A sentence shorter than this, in characters, is a fragment. */
  minFactChars: number
  /** A sentence longer than this, in characters, is left out (not cut: a cut sentence says something else). */
  maxFactChars: number
  /** A sentence with fewer words is a fragment. */
  minFactWords: number
  /** Characters of a chunk read; the rest is left unread. */
  maxChunkChars: number
}

export const DEFAULT_BUILTIN_LIMITS: Readonly<BuiltinLimits> = Object.freeze({
  maxFacts: 500,
  minFactChars: 20,
  maxFactChars: 400,
  minFactWords: 4,
  maxChunkChars: 20_000,
  maxConcepts: 100,
  maxPhraseWords: 4,
  minFacts: 2,
  maxAliases: 10,
})

/** What the built-in extractor's promptset_hash is the hash of: bump `version` when its rules change. */
export const BUILTIN_DESCRIPTION: Readonly<Record<'extractor' | 'library' | 'model', string> & { version: number }> =
  Object.freeze({
    extractor: 'kgs-builtin',
    version: 2,
    library: 'wink-nlp@2.4.0',
    model: 'wink-eng-lite-web-model@1.8.1',
  })

// Sentences that are a site's furniture, not the document's content.
const BOILERPLATE =
  /\b(?:cookies?|cookie policy|privacy policy|terms (?:of (?:use|service)|and conditions)|all rights reserved|subscribe|newsletter|sign (?:up|in)|log ?in|click here|read more|javascript|your browser|skip to)\b|©|\(c\) \d{4}/i
// A caption: `Figure 3: …`, `Fig. 2. …`, `Table 1 – …`, `Image: …`, `Source: …`.
const CAPTION = /^(?:figure|fig\.|table|image|photo|picture|chart|diagram|source|credit|listing)\s*\d*\s*[:.–—-]/i
const LATIN_LETTER = /\p{Script=Latin}/gu
const LETTER = /\p{L}/gu

const HYPHEN = /^[-‐‑–]$/
/** What is written against the word before it: closing brackets and quotes, stops, `'s`, `n't`, `cannot`'s `not`. */
const ATTACHES = /^(?:[)\]}.,;:!?…"'”’]+|['’]\p{L}*|n['’]t|not)$/iu
/** What is written against the word after it. */
const OPENS = /^[([{"'“‘]+$/

/** A table of the model's core that parsing adds to: the values it knows, by position and by name. */
interface FeatureTable {
  list?: string[]
  hash?: Record<string, number>
  [field: string]: unknown
}
interface CoreModel {
  features: Record<string, FeatureTable>
  [part: string]: unknown
}
/** What is read of a text: sentences, parts of speech, entities (not negation, sentiment or custom entities). */
const PIPE = ['sbd', 'pos', 'ner']
/** The model's core (its lexicon and feature tables), decoded once per process. */
let core: CoreModel | undefined
/**
 * The model's custom-entity part, loaded once: its loader serializes its machines again on every
 * call (a string of the string before), so an instance per extraction would grow it without end.
 */
let customEntities: unknown

/**
 * A wink-nlp instance for one extraction. wink-nlp learns the words it meets (the tokenizer
 * splits an unknown word one way the first time and another once it is known), so one instance
 * shared by the process would make a source's facts depend on what the process had read before
 * it, and a retried job could draw other facts than its first try did. Each extraction gets an
 * instance of its own over the shared core: only the feature tables a parse adds to are copied
 * (their lists; their hashes inherit the originals'), which keeps an instance cheap. The core's
 * shape is wink-eng-lite-web-model's (its `core` loader), which its types leave opaque.
 */
function freshNlp(): WinkMethods {
  const shared = (core ??= (model.core as () => CoreModel)())
  customEntities ??= (model.metaCER as () => unknown)()
  const features = () =>
    Object.fromEntries(
      Object.entries(shared.features).map(([name, table]) => [
        name,
        table.hash && table.list ? { ...table, hash: Object.create(table.hash), list: [...table.list] } : table,
      ]),
    )
  return winkNLP({ ...model, core: () => ({ ...shared, features: features() }), metaCER: () => customEntities }, PIPE)
}

interface Sentence {
  text: string
  words: Word[]
}

/** The sentences of one prose text, each as its text and its words (hyphenated compounds joined). */
function sentencesOf(doc: Document, its: WinkMethods['its']): Sentence[] {
  const tokens = doc.tokens()
  const values = tokens.out(its.value) as string[]
  const pos = tokens.out(its.pos) as string[]
  const spaces = tokens.out(its.precedingSpaces) as string[]
  const spans = doc.sentences().out(its.span) as unknown as [number, number][]
  // wink's entities are dates, times, durations, amounts, URLs and the like, never a concept: their
  // words are kept out of noun phrases.
  const inEntity = new Uint8Array(values.length)
  for (const [first, last] of doc.entities().out(its.span) as unknown as [number, number][])
    inEntity.fill(1, first, last + 1)
  const sentences: Sentence[] = []
  for (const [first, last] of spans) {
    let text = ''
    const words: Word[] = []
    const masked: number[] = []
    for (let t = first; t <= last; t++) {
      if (pos[t] === 'SPACE') {
        text += ' '
        continue
      }
      const value = values[t]!
      text += (t > first ? spaces[t]! : '') + value
      const previous = words[words.length - 1]
      // `Write-Ahead`, `B-tree`: the parts of a word joined by hyphens with no space are one word.
      const joins =
        previous !== undefined &&
        spaces[t] === '' &&
        (HYPHEN.test(value) || HYPHEN.test(previous.text.slice(-1))) &&
        !(HYPHEN.test(value) && spaces[t + 1] !== '')
      if (joins && previous) {
        previous.text += value
        if (!HYPHEN.test(value)) {
          previous.pos = 'COMPOUND'
          previous.headPos = pos[t]!
          previous.lemma = value
        }
        continue
      }
      // Only a plural-looking noun's lemma is ever read (to make a phrase's head singular).
      const lemma =
        pos[t] === 'NOUN' && /s$/i.test(value) ? (tokens.itemAt(t).out(its.lemma as never) as string) : value
      // Tokens glued together but by a bracket, a stop or an apostrophe are one written word the
      // tokenizer cut (`67P/Churyumov`, `JWT_SECRET`, `postgres.js`): its pieces name nothing.
      if (previous && spaces[t] === '' && !ATTACHES.test(value) && !OPENS.test(previous.text)) {
        previous.pos = previous.headPos = 'X'
        words.push({ text: value, pos: 'X', lemma, headPos: 'X' })
        continue
      }
      if (inEntity[t]) masked.push(words.length)
      words.push({ text: value, pos: pos[t]!, lemma, headPos: pos[t]! })
    }
    retagVerbs(words)
    for (const index of masked) words[index]!.pos = words[index]!.headPos = 'X'
    sentences.push({ text: normalizeFactText(text), words })
  }
  return sentences
}

const SUBJECT_POS = new Set(['NOUN', 'PROPN', 'PRON', 'NUM'])
const OBJECT_START_POS = new Set(['DET', 'PRON', 'PROPN', 'NUM', 'ADJ'])
/**
 * The tagger sometimes reads a verb in the third person as a plural noun (`PostgreSQL replays
 * the WAL`, `a checkpoint flushes dirty pages`): a word ending in -s right after a noun, a
 * pronoun or a number and before what starts an object is taken for the verb it is.
 */
function retagVerbs(words: Word[]): void {
  for (let i = 1; i + 1 < words.length; i++) {
    const word = words[i]!
    if (
      word.pos === 'NOUN' &&
      /[a-z]s$/.test(word.text) &&
      SUBJECT_POS.has(wordBefore(words, i)?.pos ?? '') &&
      OBJECT_START_POS.has(words[i + 1]!.pos)
    ) {
      word.pos = word.headPos = 'VERB'
    }
  }
}

/** The word before position `i`, past a parenthesis that closes there (`The Write-Ahead Log (WAL) records`). */
function wordBefore(words: readonly Word[], i: number): Word | undefined {
  let j = i - 1
  if (words[j]?.text === ')') {
    while (j >= 0 && words[j]!.text !== '(') j--
    j--
  }
  return words[j]
}

/**
 * An instruction (`Let the dough rest.`, `Feed the starter.`) starts with a verb in its base form,
 * which the tagger reads as a verb, or, capitalised, as a proper noun before a determiner.
 */
function isImperative(words: readonly Word[]): boolean {
  const [first, second] = words
  if (!first) return false
  if (first.pos === 'VERB') return !/(?:ing|ed|s)$/i.test(first.text)
  return first.pos === 'PROPN' && second?.pos === 'DET' && !/\p{Lu}/u.test(first.text.slice(1))
}

/** Brackets closed and straight double quotes paired: a sentence split inside a parenthesis is a fragment. */
function balanced(text: string): boolean {
  let depth = 0
  for (const char of text) {
    if (char === '(' || char === '[') depth++
    else if (char === ')' || char === ']') depth--
    if (depth < 0) return false
  }
  return depth === 0 && (text.match(/"/g)?.length ?? 0) % 2 === 0
}

/** Whether a sentence is a declarative statement of the document's, worth a fact. */
function isFactSentence(sentence: Sentence, limits: BuiltinLimits): boolean {
  const { text, words } = sentence
  if (text.length < limits.minFactChars || text.length > limits.maxFactChars) return false
  // A statement ends with a full stop (a closing quote or bracket may follow); a question, an
  // exclamation, a colon or no ending at all is not one.
  if (!/[^.]\.["'”’)\]]?$/.test(text)) return false
  if (!/^["'“‘(]?[\p{Lu}\d]/u.test(text)) return false
  if (!balanced(text)) return false
  const letters = text.match(LETTER)?.length ?? 0
  if (letters < text.length / 2 || (text.match(LATIN_LETTER)?.length ?? 0) < letters * 0.8) return false
  const wordCount = words.filter((word) => /\p{L}/u.test(word.text)).length
  if (wordCount < limits.minFactWords) return false
  if (!words.some((word) => word.pos === 'VERB' || word.pos === 'AUX')) return false
  if (isImperative(words)) return false
  if (!words.some((word) => /^(?:NOUN|PROPN|PRON)$/.test(word.pos) || word.pos === 'COMPOUND')) return false
  return !BOILERPLATE.test(text) && !CAPTION.test(text)
}

/** Draws facts and concepts from chunks, synchronously: the same chunks give the same result, whatever was read before. */
function extractBuiltin(
  chunks: readonly ExtractChunk[],
  limits: BuiltinLimits,
  hash: string,
  options: ExtractOptions = {},
): Extraction {
  const nlp = freshNlp()
  const { its } = nlp
  const facts: ExtractedFact[] = []
  const factWords: Word[][] = []
  const seen = new Set<string>()
  const ordered = [...chunks].sort((a, b) => a.index - b.index)
  for (const [done, chunk] of ordered.entries()) {
    options.signal?.throwIfAborted()
    if (done > 0) options.onProgress?.(done, ordered.length)
    if (facts.length >= limits.maxFacts) break
    const prose = proseBlocks(chunk.text.slice(0, limits.maxChunkChars)).join('\n\n')
    if (prose === '') continue
    for (const sentence of sentencesOf(nlp.readDoc(prose), its)) {
      if (facts.length >= limits.maxFacts) break
      if (!isFactSentence(sentence, limits) || seen.has(sentence.text)) continue
      seen.add(sentence.text)
      facts.push({
        text: sentence.text,
        chunk_index: chunk.index,
        fact_kind: 'text',
        status: 'stable',
        promptset_hash: hash,
      })
      factWords.push(sentence.words)
    }
  }
  const concepts: ExtractedConcept[] = findConcepts(factWords, limits).map((concept) => ({
    canonical_name: concept.canonical_name,
    context: '',
    description: '',
    aliases: concept.aliases,
    promptset_hash: hash,
    facts: concept.facts,
  }))
  return { promptset_hash: hash, facts, concepts }
}

/** A Markdown text's sentences, as the extractor reads them (a report's, to annotate), every sentence, fact or not. */
export function proseSentences(markdown: string): string[] {
  const prose = proseBlocks(markdown).join('\n\n')
  if (prose === '') return []
  const nlp = freshNlp()
  return sentencesOf(nlp.readDoc(prose), nlp.its)
    .map((sentence) => sentence.text)
    .filter((text) => text !== '')
}

/** The built-in extractor, with the default limits or others (which change its promptset_hash). */
export function builtinExtractor(overrides: Partial<BuiltinLimits> = {}): Extractor {
  const limits: BuiltinLimits = { ...DEFAULT_BUILTIN_LIMITS, ...overrides }
  const hash = promptsetHash({ ...BUILTIN_DESCRIPTION, limits })
  return {
    promptsetHash: hash,
    // async for the interface's sake: a model's extraction waits on the network, this one never does.
    async extract(chunks: readonly ExtractChunk[], options: ExtractOptions = {}): Promise<Extraction> {
      const extraction = extractBuiltin(chunks, limits, hash, options)
      options.onProgress?.(chunks.length, chunks.length)
      return extraction
    },
    summaries: () => builtinSummaries(BUILTIN_DESCRIPTION.extractor),
  }
}
