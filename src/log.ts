// Structured one-line JSON logs. Lines are batched and written once per event-loop turn through
// Bun's native buffered stdout writer: process.stdout.write cost a third of the CPU of a cheap
// request in profiles (see docs/benchmarks.md).
import { runtime } from './runtime/index.ts'
import type { LogLevel } from './config-variables.ts'
import { withoutUserinfo } from './redact.ts'

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export type LogFields = Record<string, unknown>

export interface Logger {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
  enabled(level: LogLevel): boolean
  /** Writes whatever is buffered, synchronously; call before exiting. */
  flush(): void
}

/** Writes to stdout; a reader that went away (EPIPE) must not take the service down with it. */
function writeStdout(text: string): void {
  try {
    runtime.writeStdout(text)
  } catch {
    // Nothing useful can be done with a log line that cannot be written.
  }
}

/** Buffered lines wait at most this long; warnings and errors are written at once. */
const FLUSH_INTERVAL_MS = 20

export function createLogger(level: LogLevel, write: (text: string) => void = writeStdout): Logger {
  const threshold = RANK[level]
  let buffer = ''
  let timer: Timer | undefined
  // toISOString is measurable at tens of thousands of lines per second; reuse it within a millisecond.
  let stampedAt = 0
  let stamp = ''
  const flush = () => {
    clearTimeout(timer)
    timer = undefined
    if (buffer === '') return
    const text = buffer
    buffer = ''
    write(text)
  }
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (RANK[lvl] < threshold) return
    const now = Date.now()
    if (now !== stampedAt) {
      stampedAt = now
      stamp = new Date(now).toISOString()
    }
    const head = `{"time":"${stamp}","level":"${lvl}","msg":${JSON.stringify(msg)}`
    const rest = fields ? JSON.stringify(fields) : '{}'
    // A last guard: no line carries a URL's credentials, whatever message or error it quotes.
    buffer += withoutUserinfo(rest === '{}' ? head + '}\n' : `${head},${rest.slice(1)}\n`)
    if (RANK[lvl] >= RANK.warn) flush()
    else if (!timer) timer = setTimeout(flush, FLUSH_INTERVAL_MS)
  }
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    enabled: (lvl) => RANK[lvl] >= threshold,
    flush,
  }
}

/** Error details for a log line: message and stack, never sent to clients. */
export function describeError(error: unknown): LogFields {
  if (error instanceof Error) return { error: error.message, stack: error.stack }
  return { error: String(error) }
}
