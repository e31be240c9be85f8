// Headless Chromium for the tests that need a real browser (the OAuth pages, CORS, Swagger UI),
// and the loopback listener a native agent runs to catch the authorization redirect (RFC 8252
// §7.3). The Chromium is provisioned here so that `npm install && npm test` passes on a machine
// with nothing else installed: the Chromium of the @sparticuz/chromium dev dependency, which npm
// installs compressed and which is unpacked into the temporary directory on first use (about
// 2 s); CHROMIUM_PATH names another one. Where neither works, the test fails with one line
// saying what to do.
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'

const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage']
const INSTRUCTION = 'run `npm install` to get @sparticuz/chromium, or set CHROMIUM_PATH to a Chromium'

/** Playwright's launch errors carry a multi-line call log; the first line says what happened. */
function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error)
    .split('\n')[0]!
    .trim()
}

function noBrowser(reason: string): Error {
  const error = new Error(`kgs tests need Chromium: ${reason}; ${INSTRUCTION}`)
  error.stack = error.message
  return error
}

async function packagedChromium(): Promise<string> {
  let pack: { executablePath(): Promise<string> }
  try {
    pack = (await import('@sparticuz/chromium')).default
  } catch {
    throw noBrowser('@sparticuz/chromium is not installed')
  }
  try {
    return await pack.executablePath()
  } catch (error) {
    throw noBrowser(`@sparticuz/chromium could not be unpacked (${firstLine(error)})`)
  }
}

/**
 * Every request leaving the machine goes to a proxy on the discard port, where nothing listens,
 * and fails (net::ERR_PROXY_CONNECTION_FAILED); Chromium never proxies loopback addresses. This
 * takes the machine off the network in Chromium itself: Playwright's request interception would
 * do it too, but under Bun its messages race ("Object with guid response@… was not bound").
 */
const OFF_NETWORK = ['--proxy-server=http://127.0.0.1:9']
/** What Chromium logs for a request that {@link OFF_NETWORK} refused. */
export const REFUSED_OFF_MACHINE = 'net::ERR_PROXY_CONNECTION_FAILED'

export async function launchBrowser({ offNetwork = false } = {}): Promise<Browser> {
  const named = process.env.CHROMIUM_PATH
  if (named && !existsSync(named)) throw noBrowser(`CHROMIUM_PATH ${named} does not exist`)
  const executablePath = named || (await packagedChromium())
  try {
    return await chromium.launch({ executablePath, args: offNetwork ? [...FLAGS, ...OFF_NETWORK] : FLAGS })
  } catch (error) {
    throw noBrowser(`${executablePath} did not start (${firstLine(error)})`)
  }
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
      return new Response('<!doctype html><title>done</title><p>You may close this window.</p>', {
        headers: { 'content-type': 'text/html' },
      })
    },
  })
  return {
    port: server.port!,
    nextRedirect: () => new Promise<URL>((resolve) => waiting.push(resolve)),
    stop: () => server.stop(true),
  }
}

/** Signs in on the authorization page the browser shows and presses `button` on the consent page. */
export async function signInAndDecide(
  page: Page,
  account: { email: string; password: string },
  button: 'Allow' | 'Deny',
): Promise<void> {
  await page.getByLabel('Email').fill(account.email)
  await page.getByLabel('Password').fill(account.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: button }).click()
}
