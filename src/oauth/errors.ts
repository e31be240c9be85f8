// The error shape of the OAuth protocol endpoints (register, token, revoke): RFC 6749 §5.2 and
// RFC 7591 §3.2.2, {"error": "<code>", "error_description": "..."}, which OAuth clients parse.
// The shared error handler (http/errors.ts) answers these endpoints' failures through
// protocolErrorShape, so that a malformed body, a body too large or a throttle's refusal comes back
// in this shape too.
import { JSON_CONTENT_TYPE, type ErrorShape } from '../http/errors.ts'
import type { Throttle } from '../http/throttle.ts'

export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly description: string,
    readonly headers: Record<string, string | string[]> = {},
  ) {
    super(description)
  }
}

function oauthResponse(error: OAuthError): Response {
  const headers = new Headers({ 'content-type': JSON_CONTENT_TYPE, 'cache-control': 'no-store' })
  // A list (several Set-Cookie) is one header line each.
  for (const [name, value] of Object.entries(error.headers)) {
    if (Array.isArray(value)) for (const one of value) headers.append(name, one)
    else headers.set(name, value)
  }
  return new Response(JSON.stringify({ error: error.code, error_description: error.description }), {
    status: error.status,
    headers,
  })
}

/**
 * The shape of one protocol endpoint, whose malformed requests are `invalidRequestCode`
 * (invalid_client_metadata at registration, invalid_request elsewhere).
 */
export function protocolErrorShape(invalidRequestCode: string): ErrorShape {
  return (error, failure) => {
    const own = error instanceof OAuthError ? error : (error as { cause?: unknown } | undefined)?.cause
    if (own instanceof OAuthError) return oauthResponse(own)
    if (!failure) return undefined
    // The headers go along (Connection: close after a body that took too long, say).
    return oauthResponse(
      new OAuthError(
        failure.status,
        failure.status === 400 ? invalidRequestCode : 'invalid_request',
        failure.message,
        failure.headers,
      ),
    )
  }
}

/**
 * A throttle's refusal at the protocol endpoints. RFC 6749 has no code for it; of its codes,
 * temporarily_unavailable (§4.1.2.1) is the one that means "try again later". The others would
 * mislead clients into acting: invalid_grant makes them drop their refresh token,
 * invalid_client re-register, invalid_request look for a bug. slow_down (RFC 8628) speaks
 * of a pending device authorization, which this server has none of.
 */
export const oauthTooManyRequests =
  (throttle: Throttle) =>
  (retryAfterSeconds: number): Error =>
    new OAuthError(429, 'temporarily_unavailable', throttle.refusalMessage(retryAfterSeconds), {
      'retry-after': String(retryAfterSeconds),
    })
