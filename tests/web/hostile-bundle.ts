// A graph bundle whose every text a page shows carries script payloads (tags, event handlers,
// javascript: links in Markdown and in HTML), for the web app's XSS test: gen-bundle's graph
// with the payloads added to titles, Markdown, descriptions, aliases, summaries and syntheses.
// Fact texts and concept names stay as they are: citations name facts and concepts by hashes of them.
import { createWriteStream } from 'node:fs'
import { bundleContent } from '../../scripts/gen-bundle.ts'
import { writeBundle, type BundleContent } from '../../src/bundle/format/writer.ts'

/** The global a payload would set if it ran. */
export const XSS_MARK = '__kgsXss'

export const PAYLOADS = [
  `<script>window.${XSS_MARK}=1</script>`,
  `<img src=x onerror="window.${XSS_MARK}=2">`,
  `<svg onload="window.${XSS_MARK}=3"></svg>`,
  `<iframe srcdoc="<script>parent.${XSS_MARK}=4</script>"></iframe>`,
  `<a href="javascript:window.${XSS_MARK}=5">html link</a>`,
  `[markdown link](javascript:window.${XSS_MARK}=6)`,
  `![image](javascript:window.${XSS_MARK}=7)`,
  `<style>body{display:none}</style><form action="javascript:window.${XSS_MARK}=8"><button>go</button></form>`,
].join(' ')

const poison = (text: string) => `${PAYLOADS}\n\n${text}`

type Rows = NonNullable<BundleContent['rows'][keyof BundleContent['rows']]>

function mapped<T>(rows: Iterable<T> | undefined, change: (row: T) => T): Iterable<T> {
  return {
    *[Symbol.iterator]() {
      for (const row of rows ?? []) yield change(row)
    },
  }
}

export async function writeHostileBundle(path: string): Promise<void> {
  const content = bundleContent({ facts: 120, seed: 11, dimensions: 0, name: 'hostile' })
  const r = content.rows as Record<string, Rows>
  const edit = (section: string, fields: string[]) => {
    r[section] = mapped(r[section] as Iterable<Record<string, unknown>>, (row) => ({
      ...row,
      ...Object.fromEntries(fields.map((f) => [f, poison(String(row[f] ?? ''))])),
    })) as Rows
  }
  edit('sources', ['parsed_title', 'parsed_markdown', 'parsed_text'])
  edit('concepts', ['description'])
  edit('concept_aliases', ['alias_text'])
  edit('concept_summaries', ['content'])
  edit('concept_syntheses', ['content'])
  edit('investigations', ['title', 'topic'])
  edit('reports', ['title', 'topic', 'body_md'])
  await writeBundle(content, createWriteStream(path), { level: 1 })
}
