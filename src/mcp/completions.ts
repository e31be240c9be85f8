// completion/complete: the values an argument may take, as the person types it. The protocol
// completes the arguments of prompts and resource templates (ref/prompt, ref/resource; a tool's
// arguments are not completed, its input schema lists an enum's values): a repository by the
// slugs of those the caller sees (list_repositories' own rule), a concept by the names in the
// repository the other arguments name, where the caller may read concepts. At most 100 values,
// with hasMore (and total where it is counted).
import type { CompleteRequestParams, CompleteResult } from '@modelcontextprotocol/server'
import { splitPage } from '../http/pagination.ts'
import { slugsStartingWith } from '../repositories/store.ts'
import { listConcepts } from '../graph/store.ts'
import type { Allowed } from './resources.ts'
import type { ToolServices } from './services.ts'

/** The protocol's most values in one answer. */
const MOST = 100
/** What a typed value is matched on at most (an argument's value is the person's typing). */
const PREFIX_CHARS = 200

const NOTHING: CompleteResult = { completion: { values: [], hasMore: false } }

export async function complete(
  services: ToolServices,
  visible: 'all' | ReadonlySet<string>,
  allowed: Allowed,
  params: CompleteRequestParams,
): Promise<CompleteResult> {
  const { name, value } = params.argument
  const typed = value.slice(0, PREFIX_CHARS)
  if (name === 'repository') {
    const only = visible === 'all' ? undefined : [...visible]
    const { slugs, total } = await slugsStartingWith(services.pools.system, only, typed, MOST)
    return { completion: { values: slugs, total, hasMore: total > slugs.length } }
  }
  if (name === 'concept') {
    const named = params.context?.arguments?.repository
    const repository = named ? await allowed('concept:read', named) : undefined
    if (!repository) return NOTHING
    const rows = await listConcepts(await services.pools.forRepository(repository.id), { limit: MOST, prefix: typed })
    const { shown, next } = splitPage(rows, MOST)
    return { completion: { values: [...new Set(shown.map((c) => c.canonical_name))], hasMore: next !== undefined } }
  }
  return NOTHING
}
