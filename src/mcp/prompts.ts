// The MCP prompts: texts a person picks in the host to start a task, whose arguments they complete
// (completions.ts). A prompt is only text: what it has the model read, the tools read, with
// their permissions.
import { t } from 'elysia'
import type { McpServer } from '@modelcontextprotocol/server'
import { standardSchema } from './standard-schema.ts'

/** A prompt's arguments, each a text the person completes (completions.ts). */
const AboutConcept = t.Object(
  {
    repository: t.String({ minLength: 1, maxLength: 100, description: 'the repository: its slug or UUID' }),
    concept: t.String({ minLength: 1, maxLength: 200, description: "the concept's name" }),
  },
  { additionalProperties: false },
)
const ABOUT_CONCEPT = standardSchema(AboutConcept)

/** Registers the prompts on a request's server. */
export function registerPrompts(server: McpServer) {
  server.registerPrompt(
    'about_concept',
    {
      title: 'What the graph knows about a concept',
      description:
        'Find a concept of a repository by its name and answer what the graph knows of it, citing its facts.',
      argsSchema: ABOUT_CONCEPT,
    },
    ({ repository, concept }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: `In the kgs repository ${JSON.stringify(repository)}, find the concept named ${JSON.stringify(concept)} (list_concepts with it as prefix, or search with kind concepts), read it with get_concept and its facts with list_facts (concept_ids), and say what the graph knows about it, citing each fact as [text](<fact:UUID>).`,
          },
        },
      ],
    }),
  )
}
