// Configured URLs may carry credentials (https://user:password@host/). Whatever prints a URL,
// or a message that may hold one (a fetch error, a config error, a log line), drops the userinfo.

/** scheme://userinfo@ anywhere in a text. */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"]*@/gi

/** `text` with the userinfo of every URL in it removed. */
export function withoutUserinfo(text: string): string {
  // Most texts hold no "@": skip the regular expression (log lines are hot).
  return text.includes('@') ? text.replace(USERINFO, '$1') : text
}

/** Reason phrases of the statuses a provider's refusal is summarized by (its body is not passed on). */
export function statusSummary(status: number): string {
  const reason =
    STATUS_REASONS[status] ?? (status >= 500 ? 'server error' : status >= 400 ? 'client error' : 'unexpected status')
  return `${status} ${reason}`
}

const STATUS_REASONS: Record<number, string> = {
  400: 'bad request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not found',
  408: 'request timeout',
  409: 'conflict',
  413: 'content too large',
  415: 'unsupported media type',
  422: 'unprocessable content',
  429: 'too many requests',
  500: 'internal server error',
  502: 'bad gateway',
  503: 'service unavailable',
  504: 'gateway timeout',
}
