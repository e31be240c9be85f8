// Structured one-line JSON logs. Lines are batched and written once per event-loop turn,
// so logging every request does not put a synchronous write on the hot path.
import type { LogLevel } from './config.ts'

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
    process.stdout.write(text)
  } catch {
    // Nothing useful can be done with a log line that cannot be written.
  }
}

export function createLogger(level: LogLevel, write: (text: string) => void = writeStdout): Logger {
  const threshold = RANK[level]
  let buffer: string[] = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (buffer.length === 0) return
    const text = buffer.join('')
    buffer = []
    write(text)
  }
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (RANK[lvl] < threshold) return
    buffer.push(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields }) + '\n')
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
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
