// `kgs bundle inspect|verify|canonical <file>`: offline tools for bundle files (`-` = stdin).
// Exit codes: 0 success, 1 a bad bundle (the first problem on stderr), 2 usage.
import { createReadStream } from 'node:fs'
import { parseArgs } from 'node:util'
import { bundleProblems, RULE_NAMES, summarizeBundle, writeCanonical, type BundleSummary } from './tools.ts'

export const BUNDLE_USAGE = `Usage: kgs bundle <command> <file>   (file "-" reads stdin)

Commands:
  inspect [--json] <file>  metadata, section counts, sizes and embedding model
  verify <file>            recompute the canonical hash and check every row and reference;
                           exit 0 if the bundle is sound (saying which hash rule matched),
                           1 with the first problem (a file without a hash is one)
  canonical <file>         write the canonical bytes (what metadata.sha256 hashes) to stdout,
                           by the rule of the file's version
`

export class BundleUsageError extends Error {}

function input(path: string): AsyncIterable<Uint8Array> {
  return path === '-' ? process.stdin : createReadStream(path)
}

function oneFile(args: string[], options: { json?: boolean } = {}): { file: string; json: boolean } {
  const { positionals, values } = parseArgs({
    args,
    options: options.json ? { json: { type: 'boolean' } } : {},
    strict: true,
    allowPositionals: true,
  })
  if (positionals.length !== 1) throw new BundleUsageError('expected exactly one file')
  return { file: positionals[0]!, json: (values as { json?: boolean }).json === true }
}

const megabytes = (bytes: number) => `${(bytes / 1_000_000).toFixed(bytes < 10_000_000 ? 2 : 1)} MB`

function inspectText(file: string, summary: BundleSummary): string {
  const { metadata, stats } = summary
  const lines = [
    `file           ${file}`,
    `name           ${metadata.name}`,
    ...(metadata.description ? [`description    ${metadata.description}`] : []),
    ...(metadata.owner ? [`owner          ${metadata.owner}`] : []),
    ...(metadata.tags?.length ? [`tags           ${metadata.tags.join(', ')}`] : []),
    `schema         ${summary.schemaVersion ?? '?'}${metadata.okt_version ? ` (written by ${metadata.okt_version})` : ''}`,
    `exported_at    ${metadata.exported_at}`,
    `sha256         ${metadata.sha256 ?? '(none)'}${metadata.sha256 && metadata.sha256 !== summary.canonicalSha256 ? `  MISMATCH: canonical ${summary.canonicalSha256}` : ''}`,
    `embeddings     ${summary.embeddings ? `${summary.embeddings.model}, ${summary.embeddings.dimensions} dimensions, ${stats.vectors} vectors` : 'none'}`,
    `size           ${megabytes(stats.compressedBytes)} gzip, ${megabytes(stats.decompressedBytes)} JSON, media ${megabytes(stats.mediaBytes)}`,
    '',
    `${'section'.padEnd(24)}${'rows'.padStart(12)}${'JSON bytes'.padStart(16)}`,
  ]
  for (const [section, bytes] of Object.entries(stats.sectionBytes)) {
    const rows = stats.rows[section as keyof typeof stats.rows]
    lines.push(
      `${section.padEnd(24)}${(rows === undefined ? '' : String(rows)).padStart(12)}${String(bytes).padStart(16)}`,
    )
  }
  return `${lines.join('\n')}\n`
}

const subcommands: Record<string, (args: string[]) => Promise<number>> = {
  async inspect(args) {
    const { file, json } = oneFile(args, { json: true })
    const summary = await summarizeBundle(input(file))
    process.stdout.write(json ? `${JSON.stringify(summary, null, 2)}\n` : inspectText(file, summary))
    return 0
  },

  async verify(args) {
    const { file } = oneFile(args)
    const summary = await summarizeBundle(input(file))
    const [problem] = bundleProblems(summary)
    if (problem) {
      process.stderr.write(`kgs bundle verify: ${problem}\n`)
      return 1
    }
    process.stdout.write(`ok ${summary.metadata.sha256} ${file} by ${RULE_NAMES[summary.matchedRule!]}\n`)
    return 0
  },

  async canonical(args) {
    const { file } = oneFile(args)
    await writeCanonical(input(file), process.stdout)
    return 0
  },
}

/** Runs a `kgs bundle` subcommand; a bad bundle is reported by the caller from the thrown error. */
export async function runBundleCommand(args: string[]): Promise<number> {
  const [name, ...rest] = args
  const subcommand = name === undefined ? undefined : subcommands[name]
  if (!subcommand)
    throw new BundleUsageError(name === undefined ? 'missing command' : `unknown command ${JSON.stringify(name)}`)
  return subcommand(rest)
}
