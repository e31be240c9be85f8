// A loopback OpenAI-compatible chat endpoint for tests: POST /v1/chat/completions, non-streamed
// (the model extractor never streams), answering in the shapes the `openai` package reads from the
// real API: a `chat.completion` object with `choices[].message`, `finish_reason` and `usage`; errors
// as `{error: {message, type, param, code}}` with their status; `retry-after` and `retry-after-ms`
// on a 429 when scripted; 401 `invalid_api_key` for a missing or wrong bearer key; 400 for a
// `json_object` request whose messages never say "json", as OpenAI refuses it. What each request
// gets is scripted per test: a queue of replies, or a function of the request. Every request is
// recorded, with its headers and parsed body, and the most requests ever in flight at once.
// POST /v1/embeddings answers too, in the real shape, with deterministic vectors (kgs-hash-v1's
// features at another size), so that a kgs given EMBEDDING_URL embeds through it.
import { hashEmbedding } from '../../src/vectors/embedder.ts'

/** What the fake answers to one request. */
export type FakeReply =
  | {
      /** The assistant message's content (a JSON text, for the extractor). */
      content: string
      finishReason?: 'stop' | 'length' | 'content_filter'
      refusal?: string
      /** Token counts to report; null reports no usage (some compatible servers do not). Default: about 4 characters a token. */
      usage?: { prompt_tokens: number; completion_tokens: number } | null
      /** Time before the answer is sent, as a slow model takes. */
      delayMs?: number
    }
  | {
      status: number
      error?: { message: string; type: string; code: string | null; param?: string | null }
      headers?: Record<string, string>
      delayMs?: number
    }

export interface RecordedRequest {
  path: string
  /** When it arrived (performance.now()). */
  at: number
  headers: Headers
  /** The JSON body the client sent. */
  body: {
    model: string
    messages: { role: string; content: string }[]
    response_format?: { type: string; json_schema?: { name: string; strict?: boolean; schema: unknown } }
    [key: string]: unknown
  }
}

export type FakeScript = (request: RecordedRequest, index: number) => FakeReply | Promise<FakeReply>

export interface FakeOpenAI {
  /** The API base to give the client: http://127.0.0.1:{port}/v1. */
  url: string
  /** Every request to /v1/chat/completions, in order of arrival. */
  requests: RecordedRequest[]
  /** Resolves with the next request once it has arrived (call it before causing that request). */
  nextRequest(): Promise<RecordedRequest>
  /** The most requests ever being answered at once. */
  maxInFlight(): number
  /** Replies for the next requests, in order; used before the script. */
  enqueue(...replies: FakeReply[]): void
  /** What requests get once the queue is empty. */
  script(script: FakeScript): void
  stop(): Promise<void>
}

export interface FakeOpenAIOptions {
  /** The bearer key required; unset: no Authorization header is required. */
  apiKey?: string
  /** Answer a json_schema response_format with OpenAI's 400 for a model without structured outputs. */
  refuseJsonSchema?: boolean
  /** The size of the vectors /v1/embeddings answers. */
  embeddingDimensions?: number
}

/** The content of a reply: a value as the model's JSON answer. */
export const jsonReply = (value: unknown, extra: { delayMs?: number } = {}): FakeReply => ({
  content: JSON.stringify(value),
  ...extra,
})

/** OpenAI's 429 of a rate limit, asking to wait `retryAfterSeconds` (its Retry-After). */
export const rateLimited = (retryAfterSeconds?: number, headers: Record<string, string> = {}): FakeReply => ({
  status: 429,
  error: {
    message: 'Rate limit reached for requests. Please try again in a moment.',
    type: 'requests',
    code: 'rate_limit_exceeded',
  },
  headers: { ...(retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) }), ...headers },
})

/** OpenAI's 500. */
export const serverError = (status = 500): FakeReply => ({
  status,
  error: {
    message: 'The server had an error while processing your request. Sorry about that!',
    type: 'server_error',
    code: null,
  },
})

const errorBody = (error: { message: string; type: string; code: string | null; param?: string | null }) =>
  JSON.stringify({ error: { message: error.message, type: error.type, param: error.param ?? null, code: error.code } })

/** The real API masks all but the ends of a wrong key it quotes. */
const masked = (key: string) =>
  key.length > 8 ? `${key.slice(0, 3)}${'*'.repeat(key.length - 7)}${key.slice(-4)}` : '***'

const estimatedTokens = (text: string) => Math.ceil(text.length / 4)

/** What a summary's or a synthesis's request (the model extractor's) asks about, as its user message carries it. */
export interface SummaryRequest {
  kind: 'summary' | 'synthesis'
  name: string
  concepts: { id: string; canonical_name: string; context: string }[]
  facts: { id: string; text: string }[]
}

/** The subject and facts of a summary's or synthesis's request; undefined for a chunk's. */
export function summaryRequest(request: RecordedRequest): SummaryRequest | undefined {
  if (request.body.response_format?.json_schema?.name !== 'summary') return undefined
  const data = /<facts>\n([\s\S]*)\n<\/facts>/.exec(request.body.messages[1]!.content)![1]!
  return JSON.parse(data) as SummaryRequest
}

/** A summary that cites every fact its request gives, one bullet each. */
export const citingReply = (asked: SummaryRequest): FakeReply =>
  jsonReply({ summary: asked.facts.map((fact) => `- ${fact.text} [source](<fact:${fact.id}>)`).join('\n') })

export function startFakeOpenAI(options: FakeOpenAIOptions = {}): FakeOpenAI {
  const requests: RecordedRequest[] = []
  const queue: FakeReply[] = []
  let script: FakeScript | undefined
  let inFlight = 0
  let mostInFlight = 0
  let counter = 0
  const waiting: ((request: RecordedRequest) => void)[] = []

  const json = (status: number, body: string, headers: Record<string, string> = {}) =>
    new Response(body, {
      status,
      headers: {
        'content-type': 'application/json',
        'x-request-id': `req_${(++counter).toString(16).padStart(8, '0')}`,
        ...headers,
      },
    })

  const delay = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms)
      signal.addEventListener('abort', () => {
        clearTimeout(timer)
        resolve()
      })
    })

  /** OpenAI's embeddings answer: a list of `embedding` objects in input order, with the usage. */
  async function embeddings(request: Request): Promise<Response> {
    const body = (await request.json()) as { model: string; input: string[] }
    return json(
      200,
      JSON.stringify({
        object: 'list',
        data: body.input.map((text, index) => ({
          object: 'embedding',
          index,
          embedding: [...hashEmbedding(text, options.embeddingDimensions ?? 64)],
        })),
        model: body.model,
        usage: { prompt_tokens: body.input.join(' ').length, total_tokens: body.input.join(' ').length },
      }),
    )
  }

  async function answer(request: Request): Promise<Response> {
    const at = performance.now()
    const path = new URL(request.url).pathname
    if (request.method === 'POST' && path === '/v1/embeddings') return embeddings(request)
    if (request.method !== 'POST' || path !== '/v1/chat/completions')
      return json(
        404,
        errorBody({ message: `Invalid URL (${request.method} ${path})`, type: 'invalid_request_error', code: null }),
      )
    // Recorded before the key is checked, so that a test sees the calls a wrong key cost.
    let body: RecordedRequest['body'] | undefined
    try {
      body = (await request.json()) as RecordedRequest['body']
    } catch {
      body = undefined
    }
    const index = body ? requests.push({ path, at, headers: request.headers, body }) - 1 : -1
    const authorization = request.headers.get('authorization')
    if (options.apiKey !== undefined && authorization !== `Bearer ${options.apiKey}`) {
      const sent = authorization?.replace(/^Bearer /, '') ?? ''
      return json(
        401,
        errorBody(
          sent === ''
            ? {
                message:
                  "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                type: 'invalid_request_error',
                code: null,
              }
            : {
                message: `Incorrect API key provided: ${masked(sent)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
                type: 'invalid_request_error',
                code: 'invalid_api_key',
              },
        ),
      )
    }
    if (!body)
      return json(
        400,
        errorBody({
          message:
            "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
          type: 'invalid_request_error',
          code: null,
        }),
      )
    const recorded = requests[index]!
    for (const resolve of waiting.splice(0)) resolve(recorded)
    if (body.stream)
      return json(
        400,
        errorBody({ message: 'fake-openai: streaming is not scripted', type: 'invalid_request_error', code: null }),
      )
    const format = body.response_format?.type
    if (format === 'json_schema' && options.refuseJsonSchema)
      return json(
        400,
        errorBody({
          message: `Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.`,
          type: 'invalid_request_error',
          param: 'response_format',
          code: null,
        }),
      )
    if (format === 'json_object' && !body.messages.some((m) => /json/i.test(String(m.content))))
      return json(
        400,
        errorBody({
          message:
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
          type: 'invalid_request_error',
          param: 'messages',
          code: null,
        }),
      )
    const reply = queue.shift() ?? (script ? await script(recorded, index) : undefined)
    if (!reply)
      return json(500, errorBody({ message: 'fake-openai: no reply scripted', type: 'server_error', code: null }))
    if (reply.delayMs) await delay(reply.delayMs, request.signal)
    if ('status' in reply)
      return json(
        reply.status,
        errorBody(reply.error ?? { message: `status ${reply.status}`, type: 'server_error', code: null }),
        reply.headers,
      )
    const promptTokens = estimatedTokens(body.messages.map((m) => String(m.content)).join(''))
    const usage =
      reply.usage === null
        ? undefined
        : (reply.usage ?? { prompt_tokens: promptTokens, completion_tokens: estimatedTokens(reply.content) })
    return json(
      200,
      JSON.stringify({
        id: `chatcmpl-fake${index}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: reply.content, refusal: reply.refusal ?? null, annotations: [] },
            logprobs: null,
            finish_reason: reply.finishReason ?? 'stop',
          },
        ],
        ...(usage && {
          usage: {
            ...usage,
            total_tokens: usage.prompt_tokens + usage.completion_tokens,
            prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
            completion_tokens_details: {
              reasoning_tokens: 0,
              audio_tokens: 0,
              accepted_prediction_tokens: 0,
              rejected_prediction_tokens: 0,
            },
          },
        }),
        service_tier: 'default',
        system_fingerprint: 'fp_fake',
      }),
    )
  }

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    // A slow reply must be able to outlast the client's time limit.
    idleTimeout: 0,
    async fetch(request) {
      inFlight++
      mostInFlight = Math.max(mostInFlight, inFlight)
      try {
        return await answer(request)
      } finally {
        inFlight--
      }
    },
  })

  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    requests,
    nextRequest: () => new Promise((resolve) => waiting.push(resolve)),
    maxInFlight: () => mostInFlight,
    enqueue: (...replies) => queue.push(...replies),
    script: (next) => {
      script = next
    },
    stop: () => server.stop(true),
  }
}
