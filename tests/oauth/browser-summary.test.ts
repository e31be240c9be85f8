// The browser summary a web app session records (src/oauth/app-session.ts): which browser on
// which system, from the User-Agent header, short whatever the header holds.
import { describe, expect, test } from 'bun:test'
import { browserSummary } from '../../src/oauth/app-session.ts'

describe('browserSummary', () => {
  test('names the browser, its major version and the system', () => {
    const cases: [string, string][] = [
      [
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36',
        'Chrome 131 on Linux',
      ],
      [
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86',
        'Edge 131 on Windows',
      ],
      [
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 OPR/115.0.0.0',
        'Opera 115 on Windows',
      ],
      ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0', 'Firefox 133 on macOS'],
      [
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
        'Safari 18 on macOS',
      ],
      [
        'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
        'Safari 18 on iOS',
      ],
      [
        'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1',
        'Chrome 131 on iOS',
      ],
      [
        'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
        'Chrome 131 on Android',
      ],
      [
        'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
        'Chrome 131 on ChromeOS',
      ],
    ]
    for (const [header, summary] of cases) expect(browserSummary(header)).toBe(summary)
  })

  test('an unknown or missing header, and a long one, give a short answer', () => {
    expect(browserSummary(null)).toBe('Unknown browser')
    expect(browserSummary('curl/8.5.0')).toBe('Unknown browser')
    expect(browserSummary(`${'x'.repeat(10_000)} Firefox/133.0 Linux`)).toBe('Unknown browser')
    expect(browserSummary(`Firefox/133.0 (Linux) ${'<script>'.repeat(1000)}`)).toBe('Firefox 133 on Linux')
  })
})
