// Embedders: the built-in lexical kgs-hash-v1, and the OpenAI-compatible HTTP provider against a
// fake provider on loopback.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { parseEnv } from '../../src/config.ts'
import {
  EmbeddingError,
  HashEmbedder,
  HttpEmbedder,
  createEmbedder,
  hashEmbedding,
} from '../../src/vectors/embedder.ts'

/** SHA-256 of the float32 bytes of kgs-hash-v1('The quick brown fox jumps over the lazy dog.'). */
const DIGEST = '70af68db8be2cf3db3caf87911e1e9a6cba856d43e2f0bb11e9bf438c212ffdb'

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!
  return dot // both are unit vectors
}

describe('kgs-hash-v1', () => {
  const embedder = new HashEmbedder()

  test('384 dimensions, unit length, deterministic', async () => {
    const [a, b] = await embedder.embed(['Water boils at 100 degrees.', 'Water boils at 100 degrees.'])
    expect(embedder.model).toBe('kgs-hash-v1')
    expect(a!.length).toBe(384)
    expect(Math.abs(Math.hypot(...a!) - 1)).toBeLessThan(1e-6)
    expect([...a!]).toEqual([...b!])
  })

  test('is stable across versions: the vector of a fixed text has a fixed digest', () => {
    // Changing the algorithm changes every stored vector; this digest makes that a visible decision.
    const digest = createHash('sha256')
      .update(Buffer.from(hashEmbedding('The quick brown fox jumps over the lazy dog.').buffer))
      .digest('hex')
    expect(digest).toBe(DIGEST)
  })

  test('lexical similarity: shared words and spellings score higher than unrelated text', () => {
    const query = hashEmbedding('boiling point of water')
    const close = hashEmbedding('Water has a boiling point of 100 °C at sea level.')
    const inflected = hashEmbedding('waters boil')
    const unrelated = hashEmbedding('The treaty was signed in Vienna in 1815.')
    expect(cosine(query, close)).toBeGreaterThan(cosine(query, unrelated) + 0.3)
    expect(cosine(query, inflected)).toBeGreaterThan(cosine(query, unrelated))
  })

  test('case and Unicode normalization; no letters at all gives the zero vector', () => {
    expect([...hashEmbedding('Café ＡＢＣ')]).toEqual([...hashEmbedding('café abc')])
    expect([...hashEmbedding(' … — ')].every((x) => x === 0)).toBe(true)
  })
})

describe('OpenAI-compatible provider', () => {
  let fake: ReturnType<typeof Bun.serve>
  let requests: { authorization: string | null; body: { model: string; input: string[] } }[] = []
  let mode: 'ok' | 'reversed' | 'error' | 'short' | 'ragged' = 'ok'

  beforeAll(() => {
    fake = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(request) {
        const body = (await request.json()) as { model: string; input: string[] }
        requests.push({ authorization: request.headers.get('authorization'), body })
        if (new URL(request.url).pathname !== '/v1/embeddings') return new Response('not found', { status: 404 })
        if (mode === 'error') return Response.json({ error: { message: 'quota exceeded' } }, { status: 429 })
        const data = body.input.map((text, index) => ({
          index,
          embedding: mode === 'ragged' && index === 1 ? [1, 2] : [text.length, index, 0.5],
        }))
        if (mode === 'reversed') data.reverse()
        if (mode === 'short') data.pop()
        return Response.json({ object: 'list', data, model: body.model })
      },
    })
  })
  afterAll(() => fake.stop(true))

  const provider = (batchSize = 128) =>
    new HttpEmbedder({
      url: `http://127.0.0.1:${fake.port}/v1/`,
      model: 'text-embedding-3-small',
      apiKey: 'sk-test-secret',
      batchSize,
    })

  test('posts the model and inputs with the key, and orders vectors by index', async () => {
    requests = []
    mode = 'reversed'
    const vectors = await provider().embed(['a', 'bbb'])
    expect(requests).toHaveLength(1)
    expect(requests[0]!.authorization).toBe('Bearer sk-test-secret')
    expect(requests[0]!.body).toMatchObject({ model: 'text-embedding-3-small', input: ['a', 'bbb'] })
    expect(vectors.map((v) => [...v])).toEqual([
      [1, 0, 0.5],
      [3, 1, 0.5],
    ])
  })

  test('batches large inputs and learns the dimensions', async () => {
    requests = []
    mode = 'ok'
    const embedder = provider(128)
    const vectors = await embedder.embed(Array.from({ length: 300 }, (_, i) => `text ${i}`))
    expect(requests.map((r) => r.body.input.length)).toEqual([128, 128, 44])
    expect(vectors).toHaveLength(300)
    expect(embedder.dimensions).toBe(3)
  })

  test('provider errors are clear and never carry the key', async () => {
    mode = 'error'
    const error = await provider()
      .embed(['x'])
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(EmbeddingError)
    expect((error as Error).message).toBe('embedding provider answered 429 too many requests')
    expect((error as Error).message).not.toContain('sk-test-secret')
  })

  test('a missing vector or inconsistent dimensions are errors', async () => {
    mode = 'short'
    expect(
      (
        (await provider()
          .embed(['x', 'y'])
          .catch((e: unknown) => e)) as Error
      ).message,
    ).toBe('embedding provider returned 1 vectors for 2 inputs')
    mode = 'ragged'
    expect(
      (
        (await provider()
          .embed(['x', 'y'])
          .catch((e: unknown) => e)) as Error
      ).message,
    ).toBe('embedding provider returned 2 dimensions, expected 3')
  })

  test('createEmbedder: the configured provider with its key, else kgs-hash-v1', async () => {
    expect(createEmbedder(parseEnv({}))).toBeInstanceOf(HashEmbedder)
    const configured = createEmbedder(
      parseEnv({
        EMBEDDING_URL: `http://127.0.0.1:${fake.port}/v1`,
        EMBEDDING_MODEL: 'text-embedding-3-large',
        EMBEDDING_API_KEY: 'sk-configured',
      }),
    )
    expect(configured).toBeInstanceOf(HttpEmbedder)
    expect(configured.model).toBe('text-embedding-3-large')
    requests = []
    mode = 'ok'
    expect((await configured.embed(['abc'])).map((v) => [...v])).toEqual([[3, 0, 0.5]])
    expect(requests.map((r) => r.authorization)).toEqual(['Bearer sk-configured'])
    expect(requests[0]!.body).toMatchObject({ model: 'text-embedding-3-large', input: ['abc'] })
  })

  test('an unreachable provider is an error naming the endpoint', async () => {
    const error = await new HttpEmbedder({ url: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 2000 })
      .embed(['x'])
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(EmbeddingError)
    expect((error as Error).message).toStartWith('embedding request to http://127.0.0.1:9/v1/embeddings failed')
  })
})
