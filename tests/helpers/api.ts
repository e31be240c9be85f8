import { expect } from 'bun:test'
// JSON over HTTP against a test server.
export interface ApiResponse<T = any> {
  status: number
  headers: Headers
  body: T
}

export function api(baseUrl: string) {
  const call = async <T = any>(
    method: string,
    path: string,
    options: { body?: unknown; token?: string; headers?: Record<string, string>; raw?: RequestInit['body'] } = {},
  ): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token) headers.authorization = `Bearer ${options.token}`
    let body: RequestInit['body'] = options.raw
    if (options.body !== undefined) {
      headers['content-type'] ??= 'application/json'
      body = JSON.stringify(options.body)
    }
    const res = await fetch(baseUrl + path, { method, headers, body })
    const text = await res.text()
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined }
  }
  return {
    call,
    get: <T = any>(path: string, token?: string) => call<T>('GET', path, { token }),
    post: <T = any>(path: string, body?: unknown, token?: string) => call<T>('POST', path, { body, token }),
    put: <T = any>(path: string, body?: unknown, token?: string) => call<T>('PUT', path, { body, token }),
  }
}

export const uniqueEmail = (prefix = 'user') => `${prefix}-${crypto.randomUUID().slice(0, 8)}@example.com`

export interface Account {
  id: string
  email: string
  token: string
}

/** Registers a new user with a unique e-mail. */
export async function registerAccount(http: ReturnType<typeof api>): Promise<Account> {
  const res = await http.post('/api/v1/auth/register', { email: uniqueEmail(), password: 'correct horse battery' })
  return { id: res.body.user.id, email: res.body.user.email, token: res.body.token }
}

/** A new token for the account (on another server: a new port is a new issuer, which refuses the old one). */
export async function signIn(http: ReturnType<typeof api>, account: Pick<Account, 'email'>): Promise<string> {
  const res = await http.post('/api/v1/auth/login', { email: account.email, password: 'correct horse battery' })
  expect(res.status).toBe(200)
  return res.body.token
}

/** An error response: the status, a body of exactly {"error"}, and (optionally) its message. */
export function expectError(res: { status: number; body: unknown }, status: number, message?: string | RegExp): void {
  expect(res.status).toBe(status)
  expect(Object.keys(res.body as object)).toEqual(['error'])
  const error = (res.body as { error: string }).error
  if (typeof message === 'string') expect(error).toBe(message)
  else if (message) expect(error).toMatch(message)
}

/** An OAuth protocol error: the status, the RFC 6749 code, and (optionally) its description. */
export function expectOAuthError(
  res: { status: number; body: unknown },
  status: number,
  error: string,
  description?: RegExp,
): void {
  expect(res.status).toBe(status)
  expect((res.body as { error?: string }).error).toBe(error)
  if (description) expect((res.body as { error_description?: string }).error_description).toMatch(description)
}
