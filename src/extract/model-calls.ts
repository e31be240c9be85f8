// The calls to the model endpoint, apart from what is asked: how one fails (ChunkFailure, in
// words that never hold the key), how long an answer says to wait, which statuses are retried or
// end every call after them, and the calls and tokens one extraction spends against its budget.
import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai'
import { statusSummary, withoutUserinfo } from '../redact.ts'

/** A chunk's extraction (or a summary) failed: the message says why, for the job's answer, and never holds the key. */
export class ChunkFailure extends Error {}

export const wait = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })

/** The wait an answer names: `retry-after-ms` (OpenAI's), else `Retry-After` in seconds or as an HTTP date. */
export function namedWaitMs(headers: Headers | undefined): number | undefined {
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '')
  if (Number.isFinite(ms) && ms >= 0) return ms
  const retryAfter = headers?.get('retry-after')
  if (!retryAfter) return undefined
  const seconds = Number.parseFloat(retryAfter)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(retryAfter)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

export const retryableStatus = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500
/** A status that every other call would meet too: the chunks after it fail without calling. */
export const brokenSetup = (status: number) => status === 401 || status === 403 || status === 404

/** An error `code` the endpoint sent, when it is an identifier (its `message` is never passed on: it may quote the key or the request). */
const errorCode = (error: APIError) =>
  typeof error.code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(error.code) ? ` (${error.code})` : ''

const times = (n: number) => (n === 1 ? 'once' : `${n} times`)

export function callFailure(error: unknown, attempts: number, timeoutMs: number): ChunkFailure {
  if (error instanceof APIConnectionTimeoutError)
    return new ChunkFailure(`the model endpoint gave no answer within ${timeoutMs / 1000} s, ${times(attempts)}`)
  if (error instanceof APIConnectionError) {
    const cause = error.cause instanceof Error ? `: ${withoutUserinfo(error.cause.message)}` : ''
    return new ChunkFailure(`the model endpoint could not be reached, ${times(attempts)}${cause}`)
  }
  if (error instanceof APIError && error.status !== undefined)
    return new ChunkFailure(
      `the model endpoint answered ${statusSummary(error.status)}${errorCode(error)}${attempts > 1 ? `, ${times(attempts)}` : ''}`,
    )
  return new ChunkFailure(`the call to the model endpoint failed: ${withoutUserinfo(String(error))}`)
}

/** Estimated when an endpoint reports no usage: about four characters a token. */
export const estimatedTokens = (text: string) => Math.ceil(text.length / 4)

/** One extraction's calls and tokens, and the budget they are held to. */
export class Spending {
  readonly usage = { calls: 0, inputTokens: 0, outputTokens: 0 }
  /** Set by an answer every call would get (401, 403, 404): the calls after it are not made. */
  broken: ChunkFailure | undefined
  constructor(private readonly budget: number) {}

  /** Before each call: throws when the budget is spent. */
  beforeCall(): void {
    if (this.broken) throw this.broken
    const spent = this.usage.inputTokens + this.usage.outputTokens
    if (this.budget > 0 && spent >= this.budget)
      throw new ChunkFailure(
        `the token budget of ${this.budget} tokens per source (LLM_MAX_TOKENS_PER_SOURCE) is spent`,
      )
    this.usage.calls++
  }
}
