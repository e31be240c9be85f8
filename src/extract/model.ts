// The model extractor: each chunk goes to an OpenAI-compatible chat endpoint (LLM_URL) through the
// official `openai` client, which answers with the chunk's atomic facts and the concepts each
// mentions, as JSON validated here against the schema the request names (docs/extract.md).
//
// The client's own retries are off (maxRetries: 0) and this module retries instead: openai v6
// sleeps for whatever Retry-After says, without a ceiling and without listening to the caller's
// abort signal while it sleeps, so a job could neither be cancelled nor bounded in a wait; and
// here every attempt is counted as a call (how a call fails, waits and spends: model-calls.ts).
// The document's text only ever travels as a JSON string between delimiters that the system
// prompt declares to be data.
import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import OpenAI, { APIConnectionError, APIError } from 'openai'
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions'
import { conceptKey, normalizeFactText } from '../graph/rules.ts'
import {
  type ExtractChunk,
  type ExtractedConcept,
  type ExtractedFact,
  type Extraction,
  type ExtractOptions,
  type Extractor,
  promptsetHash,
  type SummaryFact,
  type SummarySubject,
  type SummaryWriter,
} from './extractor.ts'
import retryTemplate from './prompts/facts.retry.md' with { type: 'text' }
import systemTemplate from './prompts/facts.system.md' with { type: 'text' }
import userTemplate from './prompts/facts.user.md' with { type: 'text' }
import summarySystemTemplate from './prompts/summary.system.md' with { type: 'text' }
import summaryUserTemplate from './prompts/summary.user.md' with { type: 'text' }
import { citationProblem } from './summaries.ts'
import { eachBounded } from './bounded.ts'
import {
  brokenSetup,
  callFailure,
  ChunkFailure,
  estimatedTokens,
  namedWaitMs,
  retryableStatus,
  Spending,
  wait,
} from './model-calls.ts'

/** Config['llm']: where the model is and what bounds the work on one source. */
export interface ModelSettings {
  /** The API base, e.g. http://localhost:11434/v1; requests go to {url}/chat/completions. */
  url: string
  model: string
  /** Sent as a bearer token; without it no Authorization header is sent. */
  apiKey?: string
  /** Calls in flight at once for one source. */
  concurrency: number
  /** Time limit of one call (one attempt). */
  timeoutMs: number
  /** Tokens, prompt and completion, one source may spend; 0 is unlimited. */
  maxTokensPerSource: number
}

/** How a call that meets a 429, a 5xx, a timeout or a lost connection is tried again. */
export interface RetryPolicy {
  /** Attempts of one call, the first included. */
  attempts: number
  /** The first wait when the endpoint names none (Retry-After); doubled at each attempt, with jitter. */
  baseDelayMs: number
  /** The longest wait: a Retry-After asking for more fails the call at once. */
  maxDelayMs: number
}

const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  attempts: 5,
  baseDelayMs: 1000,
  maxDelayMs: 60_000,
})

/** What one chunk's answer may hold, checked after the schema (the schema leaves lengths out: see CHUNK_ANSWER). */
const MODEL_LIMITS = Object.freeze({ factChars: 1000, nameChars: 200, factsPerChunk: 100, maxAliases: 10 })

const Concept = Type.Object(
  {
    name: Type.String({ description: 'the usual name of the concept' }),
    context: Type.String({ description: 'the domain or sense meant; "" when unambiguous' }),
    aliases: Type.Array(Type.String(), { description: 'other names the document gives it' }),
  },
  { additionalProperties: false },
)
/**
 * The answer to one chunk. OpenAI's strict structured outputs refuse some keywords (string
 * lengths among them), so the schema sent holds only what every server accepts; the lengths of
 * MODEL_LIMITS are checked after it, and quoted the same way when broken.
 */
const CHUNK_ANSWER = Type.Object(
  {
    facts: Type.Array(
      Type.Object(
        {
          text: Type.String({ description: 'one atomic, self-contained claim of the chunk' }),
          concepts: Type.Array(Concept),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)
type ChunkAnswer = Static<typeof CHUNK_ANSWER>

const SCHEMA_TEXT = JSON.stringify(CHUNK_ANSWER)
const SYSTEM_PROMPT = systemTemplate.replace('{{schema}}', SCHEMA_TEXT)

/** The answer to a summary's or a synthesis's request: its Markdown. */
const SUMMARY_ANSWER = Type.Object(
  { summary: Type.String({ description: 'the Markdown, citing the facts it uses as [text](<fact:ID>)' }) },
  { additionalProperties: false },
)
const SUMMARY_SCHEMA_TEXT = JSON.stringify(SUMMARY_ANSWER)
const SUMMARY_SYSTEM_PROMPT = summarySystemTemplate.replace('{{schema}}', SUMMARY_SCHEMA_TEXT)

/** What a request asks the answer to be: the schema's name and text. */
interface AnswerSchema {
  name: string
  text: string
}
const CHUNK_SCHEMA: AnswerSchema = { name: 'chunk_facts', text: SCHEMA_TEXT }
const SUMMARY_SCHEMA: AnswerSchema = { name: 'summary', text: SUMMARY_SCHEMA_TEXT }
/** Every request parameter that shapes the answer: with the prompts and the model, the promptset_hash. */
const REQUEST_PARAMETERS = Object.freeze({ temperature: 0 })

/** What the model extractor's promptset_hash is the hash of, but the model: bump `version` when its code changes what it draws. */
export const MODEL_DESCRIPTION = Object.freeze({
  extractor: 'kgs-model',
  version: 1,
  prompts: {
    system: systemTemplate,
    user: userTemplate,
    retry: retryTemplate,
    summarySystem: summarySystemTemplate,
    summaryUser: summaryUserTemplate,
  },
  schema: SCHEMA_TEXT,
  summarySchema: SUMMARY_SCHEMA_TEXT,
  parameters: REQUEST_PARAMETERS,
  limits: MODEL_LIMITS,
})

type ResponseFormat = 'json_schema' | 'json_object'

/** Data as a user message carries it: JSON in which `<` and `>` are escaped, so no text of it closes the delimiters. */
const quotedData = (value: unknown) => JSON.stringify(value).replaceAll('<', '\\u003c').replaceAll('>', '\\u003e')

/** The chunk as the user message carries it. */
function userMessage(chunk: ExtractChunk): string {
  const document = quotedData({ chunk_index: chunk.index, heading_path: chunk.headingPath ?? [], text: chunk.text })
  return userTemplate.replace('{{chunk_index}}', String(chunk.index)).replace('{{document}}', () => document)
}

/** A summary's or synthesis's subject and facts as the user message carries them. */
function summaryMessage(subject: SummarySubject, facts: readonly SummaryFact[]): string {
  const data = quotedData({
    kind: subject.kind,
    name: subject.name,
    concepts: subject.concepts,
    facts: facts.map((fact) => ({ id: fact.id, text: fact.text })),
  })
  return summaryUserTemplate.replace('{{kind}}', subject.kind).replace('{{facts}}', () => data)
}

/** A model may wrap its JSON in a Markdown code fence in json_object mode; the fence is not the answer. */
const withoutFence = (text: string) => text.replace(/^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/, '$1')

/** The answer parsed and held to `schema`, or why it is refused, in words the model is sent back. */
function parseAnswer<T>(content: string, schema: TSchema): { answer: T } | { problem: string } {
  let value: unknown
  try {
    value = JSON.parse(withoutFence(content))
  } catch (error) {
    return { problem: `it is not JSON (${(error as Error).message})` }
  }
  const errors = [...Value.Errors(schema, value)].slice(0, 3)
  if (errors.length > 0)
    return {
      problem: `it does not match the schema: ${errors.map((e) => `${e.path || '/'}: ${e.message}`).join('; ')}`,
    }
  return { answer: value as T }
}

/** A chunk's answer, or why it is refused. */
function checkAnswer(content: string): { answer: ChunkAnswer } | { problem: string } {
  const parsed = parseAnswer<ChunkAnswer>(content, CHUNK_ANSWER)
  if ('problem' in parsed) return parsed
  const { answer } = parsed
  if (answer.facts.length > MODEL_LIMITS.factsPerChunk)
    return { problem: `it has ${answer.facts.length} facts, more than ${MODEL_LIMITS.factsPerChunk}` }
  for (const [i, fact] of answer.facts.entries()) {
    if (fact.text.trim() === '') return { problem: `/facts/${i}/text is empty` }
    if (fact.text.length > MODEL_LIMITS.factChars)
      return { problem: `/facts/${i}/text is longer than ${MODEL_LIMITS.factChars} characters` }
    for (const [j, concept] of fact.concepts.entries()) {
      const at = `/facts/${i}/concepts/${j}`
      if (concept.name.trim() === '') return { problem: `${at}/name is empty` }
      const long = [concept.name, concept.context, ...concept.aliases].some((s) => s.length > MODEL_LIMITS.nameChars)
      if (long)
        return { problem: `${at} has a name, context or alias longer than ${MODEL_LIMITS.nameChars} characters` }
    }
  }
  return { answer }
}

/** The part of one chunk's answer the extraction keeps. */
type ChunkResult = { answer: ChunkAnswer } | { error: string }

/** Facts in chunk order (one per normalized text, at its first chunk) and concepts by name and context. */
function assemble(
  ordered: readonly ExtractChunk[],
  results: readonly ChunkResult[],
  hash: string,
): Pick<Extraction, 'facts' | 'concepts' | 'failedChunks'> {
  const facts: ExtractedFact[] = []
  const factAt = new Map<string, number>()
  const concepts = new Map<string, ExtractedConcept & { names: Set<string>; mentions: Set<number> }>()
  const failedChunks: { chunk_index: number; error: string }[] = []
  for (const [i, result] of results.entries()) {
    const chunk = ordered[i]!
    if ('error' in result) {
      failedChunks.push({ chunk_index: chunk.index, error: result.error })
      continue
    }
    for (const fact of result.answer.facts) {
      const text = normalizeFactText(fact.text)
      let position = factAt.get(text)
      if (position === undefined) {
        position = facts.length
        factAt.set(text, position)
        facts.push({ text, chunk_index: chunk.index, fact_kind: 'text', status: 'stable', promptset_hash: hash })
      }
      for (const mention of fact.concepts) {
        const name = mention.name.trim()
        const context = mention.context.trim()
        const key = conceptKey(name, context)
        let concept = concepts.get(key)
        if (!concept) {
          concept = {
            canonical_name: name,
            context,
            description: '',
            aliases: [],
            promptset_hash: hash,
            facts: [],
            names: new Set([name.toLowerCase()]),
            mentions: new Set(),
          }
          concepts.set(key, concept)
        }
        concept.mentions.add(position)
        for (const alias of mention.aliases.map((a) => a.trim())) {
          if (
            alias === '' ||
            concept.names.has(alias.toLowerCase()) ||
            concept.aliases.length >= MODEL_LIMITS.maxAliases
          )
            continue
          concept.names.add(alias.toLowerCase())
          concept.aliases.push(alias)
        }
      }
    }
  }
  return {
    facts,
    concepts: [...concepts.values()].map(({ names: _names, mentions, ...concept }) => ({
      ...concept,
      facts: [...mentions].sort((a, b) => a - b),
    })),
    failedChunks,
  }
}

/**
 * The model extractor for these settings (Config['llm']). `retry` is for tests, which cannot wait
 * a second per backoff; the defaults are DEFAULT_RETRY_POLICY.
 */
export function modelExtractor(settings: ModelSettings, retry: Partial<RetryPolicy> = {}): Extractor {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...retry }
  const client = new OpenAI({
    baseURL: settings.url,
    // The client insists on a key; without one it is never sent (the header is removed below).
    apiKey: settings.apiKey ?? 'none',
    // Named, so that OPENAI_ADMIN_KEY, OPENAI_ORG_ID and OPENAI_PROJECT_ID in the environment are not sent to another endpoint.
    adminAPIKey: null,
    organization: null,
    project: null,
    defaultHeaders: settings.apiKey ? undefined : { Authorization: null },
    maxRetries: 0,
    timeout: settings.timeoutMs,
    // OPENAI_LOG=debug would print the requests, the document's text with them.
    logLevel: 'off',
  })
  const hash = promptsetHash({ ...MODEL_DESCRIPTION, model: settings.model })
  // Learnt once per extractor: a server that refuses json_schema is asked for json_object from then on.
  let format: ResponseFormat = 'json_schema'

  const responseFormat = (mode: ResponseFormat, answer: AnswerSchema) =>
    mode === 'json_schema'
      ? ({
          type: 'json_schema',
          json_schema: { name: answer.name, strict: true, schema: JSON.parse(answer.text) },
        } as const)
      : ({ type: 'json_object' } as const)

  /** One completion, with the retries of a 429, a 5xx, a timeout or a lost connection. */
  async function complete(
    messages: ChatCompletionMessageParam[],
    answer: AnswerSchema,
    spending: Spending,
    signal?: AbortSignal,
  ) {
    for (let attempt = 1; ; attempt++) {
      spending.beforeCall()
      const mode = format
      try {
        const completion = await client.chat.completions.create(
          { model: settings.model, messages, ...REQUEST_PARAMETERS, response_format: responseFormat(mode, answer) },
          { signal },
        )
        const choice = completion.choices[0]
        const content = choice?.message.content ?? ''
        spending.usage.inputTokens +=
          completion.usage?.prompt_tokens ?? estimatedTokens(messages.map((m) => String(m.content)).join(''))
        spending.usage.outputTokens += completion.usage?.completion_tokens ?? estimatedTokens(content)
        return { content, finishReason: choice?.finish_reason, refusal: choice?.message.refusal }
      } catch (error) {
        if (signal?.aborted) throw signal.reason
        if (error instanceof APIError && mode === 'json_schema' && (error.status === 400 || error.status === 422)) {
          format = 'json_object'
          attempt--
          continue
        }
        if (error instanceof APIError && error.status !== undefined && brokenSetup(error.status)) {
          spending.broken = callFailure(error, attempt, settings.timeoutMs)
          throw spending.broken
        }
        const retryable =
          error instanceof APIConnectionError ||
          (error instanceof APIError && error.status !== undefined && retryableStatus(error.status))
        if (!retryable || attempt >= policy.attempts) throw callFailure(error, attempt, settings.timeoutMs)
        const named = error instanceof APIError ? namedWaitMs(error.headers) : undefined
        if (named !== undefined && named > policy.maxDelayMs)
          throw new ChunkFailure(
            `${callFailure(error, attempt, settings.timeoutMs).message}, asking to wait ${Math.ceil(named / 1000)} s, longer than the ${policy.maxDelayMs / 1000} s kgs waits`,
          )
        const backoff = Math.min(policy.baseDelayMs * 2 ** (attempt - 1), policy.maxDelayMs)
        await wait(named ?? backoff * (1 - Math.random() * 0.25), signal)
      }
    }
  }

  /**
   * An answer `check` accepts: asked once, and once more quoting what was wrong with the first;
   * `cutOff` is what the model is told when its answer was cut at the token limit.
   */
  async function askChecked<T>(
    messages: ChatCompletionMessageParam[],
    answer: AnswerSchema,
    check: (content: string) => { answer: T } | { problem: string },
    cutOff: string,
    spending: Spending,
    signal?: AbortSignal,
  ): Promise<T> {
    let problem = ''
    for (let round = 1; round <= 2; round++) {
      const { content, finishReason, refusal } = await complete(messages, answer, spending, signal)
      if (refusal || finishReason === 'content_filter')
        throw new ChunkFailure(`the model refused to answer (finish_reason ${finishReason ?? 'unknown'})`)
      const checked =
        finishReason === 'length'
          ? { problem: `it was cut off at the token limit (finish_reason length): ${cutOff}` }
          : content.trim() === ''
            ? { problem: 'it was empty' }
            : check(content)
      if ('answer' in checked) return checked.answer
      problem = checked.problem
      messages.push(
        { role: 'assistant', content },
        { role: 'user', content: retryTemplate.replace('{{error}}', () => problem) },
      )
    }
    throw new ChunkFailure(`the model's answer was refused twice: ${problem}`)
  }

  /** One chunk's answer. */
  const extractChunk = (chunk: ExtractChunk, spending: Spending, signal?: AbortSignal) =>
    askChecked(
      [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'user', content: userMessage(chunk) },
      ],
      CHUNK_SCHEMA,
      checkAnswer,
      'write fewer or shorter facts',
      spending,
      signal,
    )

  /** A written summary or synthesis, whose citations are all of the facts given (citationProblem). */
  function summaryWriter(): SummaryWriter {
    const spending = new Spending(settings.maxTokensPerSource)
    return {
      model: settings.model,
      concurrency: settings.concurrency,
      usage: spending.usage,
      async summarize(subject, facts, { signal }) {
        const check = (content: string): { answer: string } | { problem: string } => {
          const parsed = parseAnswer<Static<typeof SUMMARY_ANSWER>>(content, SUMMARY_ANSWER)
          if ('problem' in parsed) return parsed
          const problem = citationProblem(parsed.answer.summary, subject, facts)
          return problem ? { problem } : { answer: parsed.answer.summary }
        }
        try {
          const content = await askChecked(
            [
              { role: 'system', content: SUMMARY_SYSTEM_PROMPT },
              { role: 'user', content: summaryMessage(subject, facts) },
            ],
            SUMMARY_SCHEMA,
            check,
            'write a shorter summary',
            spending,
            signal,
          )
          return { content }
        } catch (error) {
          if (signal?.aborted) throw signal.reason
          if (!(error instanceof ChunkFailure)) throw error
          return { error: error.message }
        }
      },
    }
  }

  return {
    promptsetHash: hash,
    async extract(chunks: readonly ExtractChunk[], options: ExtractOptions = {}): Promise<Extraction> {
      const { signal, onProgress } = options
      signal?.throwIfAborted()
      const ordered = [...chunks].sort((a, b) => a.index - b.index)
      const spending = new Spending(settings.maxTokensPerSource)
      const results: ChunkResult[] = new Array(ordered.length)
      let done = 0
      await eachBounded(ordered, settings.concurrency, async (chunk, i) => {
        signal?.throwIfAborted()
        try {
          results[i] = { answer: await extractChunk(chunk, spending, signal) }
        } catch (error) {
          if (signal?.aborted) throw signal.reason
          if (!(error instanceof ChunkFailure)) throw error
          results[i] = { error: error.message }
        }
        onProgress?.(++done, ordered.length)
      })
      return { promptset_hash: hash, ...assemble(ordered, results, hash), usage: spending.usage }
    },
    summaries: summaryWriter,
  }
}
