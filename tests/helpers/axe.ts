// axe-core on a page of the web app, as its browser tests check it: nothing serious or critical,
// at a desktop width and at a phone's, where nothing may be wider than the screen either.
import { expect } from 'bun:test'
import AxeBuilder from '@axe-core/playwright'
import type { Page } from 'playwright-core'

const WIDTHS = [1280, 375]

export async function expectAccessibleAtBothWidths(page: Page): Promise<void> {
  try {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 800 })
      const results = await new AxeBuilder({ page }).analyze()
      const bad = results.violations.filter(
        (violation) => violation.impact === 'serious' || violation.impact === 'critical',
      )
      expect(
        bad.map(
          (violation) =>
            `${page.url()} at ${width} px: ${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
        ),
      ).toEqual([])
      const scrollWidth = await page.evaluate<number>('document.documentElement.scrollWidth')
      expect({ width, fits: scrollWidth <= width }).toEqual({ width, fits: true })
    }
  } finally {
    await page.setViewportSize({ width: WIDTHS[0]!, height: 800 })
  }
}
