// Headless Chromium for the tests that need a real browser (the OAuth pages, CORS), and the
// loopback listener a native agent runs to catch the authorization redirect (RFC 8252 §7.3).
// The browser's location is known here only.
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'

const SYSTEM_CHROMIUM = '/usr/bin/chromium'

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    ...(existsSync(SYSTEM_CHROMIUM) ? { executablePath: SYSTEM_CHROMIUM } : {}),
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
  })
}

export interface LoopbackListener {
  /** The port the listener got. */
  port: number
  /** Resolves with the next request's URL. */
  nextRedirect(): Promise<URL>
  stop(): void
}

/** An agent's redirect listener on `hostname` (127.0.0.1 or ::1), on an ephemeral port. */
export function listenOnLoopback(hostname: string): LoopbackListener {
  const waiting: ((url: URL) => void)[] = []
  const server = Bun.serve({
    port: 0,
    hostname,
    fetch(request) {
      waiting.shift()?.(new URL(request.url))
      return new Response('<!doctype html><title>done</title><p>You may close this window.</p>', { headers: { 'content-type': 'text/html' } })
    },
  })
  return {
    port: server.port!,
    nextRedirect: () => new Promise<URL>((resolve) => waiting.push(resolve)),
    stop: () => server.stop(true),
  }
}

/** Signs in on the authorization page the browser shows and presses `button` on the consent page. */
export async function signInAndDecide(page: Page, account: { email: string; password: string }, button: 'Allow' | 'Deny'): Promise<void> {
  await page.getByLabel('Email').fill(account.email)
  await page.getByLabel('Password').fill(account.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: button }).click()
}
