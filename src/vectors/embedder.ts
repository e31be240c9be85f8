// Embedders turn texts into vectors for facts and concepts. Two implementations:
// - kgs-hash-v1, built in and the default: signed feature hashing of words, adjacent word pairs
//   and character trigrams into 384 dimensions, L2-normalized. It is deterministic and needs
//   no model files or network, and it is lexical: texts sharing words and spellings come out
//   close; synonyms do not.
// - An OpenAI-compatible HTTP provider (POST {EMBEDDING_URL}/embeddings).
import { statusSummary, withoutUserinfo } from '../redact.ts'
import type { Config } from '../config.ts'

export interface Embedder {
  readonly model: string
  readonly dimensions: number
  /** One vector per text, in order. */
  embed(texts: readonly string[]): Promise<Float32Array[]>
}

export class EmbeddingError extends Error {}

const HASH_DIMENSIONS = 384
const WORD_WEIGHT = 1
const PAIR_WEIGHT = 0.7
const TRIGRAM_WEIGHT = 0.4

/** 32-bit FNV-1a over UTF-16 code units: stable across platforms and versions. */
function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

function tokens(text: string): string[] {
  return (
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  )
}

/** The kgs-hash-v1 vector of one text (all zeros for a text without letters or digits). */
export function hashEmbedding(text: string, dimensions = HASH_DIMENSIONS): Float32Array {
  const vector = new Float64Array(dimensions)
  const add = (feature: string, weight: number) => {
    const hash = fnv1a(feature)
    // The index from the hash, the sign from an independent hash: collisions cancel on average.
    vector[hash % dimensions]! += fnv1a(feature, 0x9747b28c) & 1 ? weight : -weight
  }
  const words = tokens(text)
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    add(`w:${word}`, WORD_WEIGHT)
    if (i + 1 < words.length) add(`p:${word} ${words[i + 1]}`, PAIR_WEIGHT)
    const padded = `^${word}$`
    for (let j = 0; j + 3 <= padded.length; j++) add(`c:${padded.slice(j, j + 3)}`, TRIGRAM_WEIGHT)
  }
  let norm = 0
  for (const x of vector) norm += x * x
  norm = Math.sqrt(norm)
  return Float32Array.from(vector, (x) => (norm === 0 ? 0 : x / norm))
}

export class HashEmbedder implements Embedder {
  readonly model = 'kgs-hash-v1'
  readonly dimensions = HASH_DIMENSIONS

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => hashEmbedding(text, this.dimensions))
  }
}

export interface HttpEmbedderOptions {
  /** Base URL of an OpenAI-compatible API, e.g. https://api.openai.com/v1 */
  url: string
  model: string
  apiKey?: string
  /** Inputs per request. */
  batchSize?: number
  timeoutMs?: number
}

export class HttpEmbedder implements Embedder {
  readonly model: string
  private knownDimensions: number | undefined
  private readonly endpoint: string

  constructor(private readonly options: HttpEmbedderOptions) {
    this.model = options.model
    this.endpoint = `${options.url.replace(/\/+$/, '')}/embeddings`
  }

  /** Known after the first answer (the provider decides). */
  get dimensions(): number {
    return this.knownDimensions ?? 0
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const batchSize = this.options.batchSize ?? 128
    const vectors: Float32Array[] = []
    for (let start = 0; start < texts.length; start += batchSize)
      vectors.push(...(await this.request(texts.slice(start, start + batchSize))))
    return vectors
  }

  private async request(input: readonly string[]): Promise<Float32Array[]> {
    let response: Response
    try {
      response = await fetch(this.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.model, input, encoding_format: 'float' }),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
      })
    } catch (error) {
      throw new EmbeddingError(
        withoutUserinfo(`embedding request to ${this.endpoint} failed: ${(error as Error).message}`),
      )
    }
    // Only the status: a provider's body may quote our request, its key or its URL's userinfo.
    if (!response.ok) {
      await response.body?.cancel()
      throw new EmbeddingError(`embedding provider answered ${statusSummary(response.status)}`)
    }
    const body = (await response.json().catch(() => undefined)) as
      | { data?: { index?: unknown; embedding?: unknown }[] }
      | undefined
    const data = body?.data
    if (!Array.isArray(data) || data.length !== input.length)
      throw new EmbeddingError(
        `embedding provider returned ${Array.isArray(data) ? data.length : 'no'} vectors for ${input.length} inputs`,
      )
    const vectors: Float32Array[] = new Array(input.length)
    for (const item of data) {
      const index = item.index
      const embedding = item.embedding
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= input.length || vectors[index])
        throw new EmbeddingError('embedding provider returned a bad or repeated index')
      if (
        !Array.isArray(embedding) ||
        embedding.length === 0 ||
        !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))
      )
        throw new EmbeddingError('embedding provider returned a vector that is not a list of numbers')
      this.knownDimensions ??= embedding.length
      if (embedding.length !== this.knownDimensions)
        throw new EmbeddingError(
          `embedding provider returned ${embedding.length} dimensions, expected ${this.knownDimensions}`,
        )
      vectors[index] = Float32Array.from(embedding as number[])
    }
    return vectors
  }
}

/** The configured provider (EMBEDDING_URL), else the built-in kgs-hash-v1. */
export function createEmbedder(config: Pick<Config, 'embedding'>): Embedder {
  return config.embedding ? new HttpEmbedder(config.embedding) : new HashEmbedder()
}
