// Whether an error means "the database cannot be reached right now" (it restarts, is down, or
// refuses sessions) rather than "this request is wrong" or "this is a bug": such requests are
// answered 503 and succeed again once the pools reconnect, with no restart of the service.

/** postgres.js's own codes for a connection that closed, failed to open in time, or was ended. */
const DRIVER_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'CONNECTION_ENDED'])

/** Socket errors of a connection attempt or of an open connection. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
])

/**
 * SQLSTATEs of a server that is going away or not accepting sessions: connection exceptions
 * (class 08), admin and crash shutdown, "starting up or shutting down", too many connections,
 * and a database that does not exist (dropped, or not yet restored).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300|3D000)$/

export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const code = (error as { code?: unknown }).code
  if (typeof code !== 'string') return false
  if (DRIVER_CODES.has(code)) return true
  if ((error as Error).name === 'PostgresError') return UNAVAILABLE_SQLSTATE.test(code)
  // Only a socket error that postgres.js passed on (it names the query it failed), not one of a
  // blob store or an outgoing fetch.
  return SOCKET_CODES.has(code) && 'query' in error
}
