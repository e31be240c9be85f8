// What the read and the write tools share: the arguments naming a repository and a row, the
// preview of a long text, and the resource links of an answer.
import { t } from 'elysia'
import { UUID_PATTERN } from '../uuid.ts'
import type { Repository } from '../repositories/repositories.ts'
import type { Link } from './tool.ts'

/** Characters of a long text a list shows; the detail tool gives the whole. */
const PREVIEW_CHARS = 300

export const preview = (text: string) => (text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text)

export const Uuid = (description: string) => t.String({ pattern: UUID_PATTERN, description })
export const RepositoryArgument = t.String({
  minLength: 1,
  maxLength: 100,
  description: 'the repository: its UUID or slug (list_repositories gives them)',
})

/** The argument of a destructive tool saying the person agreed, for a client that cannot ask them (server.ts). */
export const Confirm = t.Optional(
  t.Boolean({
    description:
      'true: the person agreed to this change; needed only where the host cannot ask them itself (no elicitation)',
  }),
)

/** kgs://{repository id}/{kind}/{id}: what the resources of server.ts answer. */
const resourceUri = (repositoryId: string, kind: 'facts' | 'concepts' | 'reports', id: string) =>
  `kgs://${repositoryId}/${kind}/${id}`

/** In the order the SDK's result schema writes a resource_link's fields (name, uri), which fast-call.ts answers as they are. */
export const link = (
  repository: Repository | undefined,
  kind: 'facts' | 'concepts' | 'reports',
  id: string,
  name: string,
): Link => ({ name, uri: resourceUri(repository!.id, kind, id) })
