// The configuration reference, generated from EnvSchema so that `kgs help config` and
// docs/configuration.md can never list other variables than the ones parseEnv reads.
import { EnvSchema } from './config-variables.ts'

interface Variable {
  name: string
  defaultValue: string
  meaning: string
}

function variables(): Variable[] {
  return Object.entries(EnvSchema.properties).map(([name, schema]) => {
    const s = schema as { default?: unknown; description?: string }
    return { name, defaultValue: s.default === undefined ? 'unset' : String(s.default), meaning: s.description ?? '' }
  })
}

/** Plain text for a terminal: one variable a paragraph. */
export function configText(): string {
  const lines = ['Configuration: environment variables, validated at start-up.', '']
  for (const v of variables()) lines.push(`  ${v.name} (default: ${v.defaultValue})`, `      ${v.meaning}`)
  return lines.join('\n') + '\n'
}

export const CONFIG_DOC_PATH = 'docs/configuration.md'

/** docs/configuration.md; `bun scripts/docs-config.ts` writes it, a test checks it is current. */
export function configMarkdown(): string {
  const rows = variables().map(
    (v) =>
      `| \`${v.name}\` | ${v.defaultValue === 'unset' ? 'unset' : `\`${v.defaultValue}\``} | ${v.meaning.replaceAll('|', '\\|')} |`,
  )
  return [
    '# Configuration',
    '',
    '<!-- Generated from EnvSchema (src/config-variables.ts) by `bun scripts/docs-config.ts`; edit the schema, not this file. -->',
    '',
    'All configuration comes from the environment and is validated at start-up; a bad value stops',
    'the process with one line naming the variable, e.g.',
    '`kgs: invalid PORT: expected an integer from 0 to 65535, got "eighty"`. `kgs help config` prints',
    'the same list.',
    '',
    '| variable | default | meaning |',
    '|---|---|---|',
    ...rows,
    '',
    '**A fleet** (several instances on one PostgreSQL) must share `JWT_SECRET` and `BASE_URL` (the',
    'token issuer): a token issued by one instance is then accepted by all of them. See',
    '[operations](operations.md).',
    '',
  ].join('\n')
}
