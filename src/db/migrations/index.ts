// The migration sets, in order. SQL files are imported as text so the compiled binary carries
// them; tests check that every file in the folders is listed here exactly once.
import system0001 from './system/0001_repository_databases.sql' with { type: 'text' }
import system0002 from './system/0002_accounts.sql' with { type: 'text' }
import system0003 from './system/0003_role_assignments.sql' with { type: 'text' }
import system0004 from './system/0004_repositories.sql' with { type: 'text' }
import system0005 from './system/0005_oauth_clients.sql' with { type: 'text' }
import system0006 from './system/0006_oauth_authorizations.sql' with { type: 'text' }
import system0007 from './system/0007_oauth_codes.sql' with { type: 'text' }
import system0008 from './system/0008_oauth_tokens.sql' with { type: 'text' }
import system0009 from './system/0009_jobs.sql' with { type: 'text' }
import system0010 from './system/0010_graphs.sql' with { type: 'text' }
import system0011 from './system/0011_session_ends.sql' with { type: 'text' }
import system0012 from './system/0012_session_idle.sql' with { type: 'text' }
import system0013 from './system/0013_graph_owner_email.sql' with { type: 'text' }
import system0014 from './system/0014_oauth_bindings.sql' with { type: 'text' }
import system0015 from './system/0015_job_turns.sql' with { type: 'text' }
import system0016 from './system/0016_oauth_first_party.sql' with { type: 'text' }
import system0017 from './system/0017_repository_counts.sql' with { type: 'text' }
import system0018 from './system/0018_oauth_client_metadata_documents.sql' with { type: 'text' }
import system0019 from './system/0019_repository_counts_version.sql' with { type: 'text' }
import system0020 from './system/0020_oauth_app_sessions.sql' with { type: 'text' }
import system0021 from './system/0021_invitations.sql' with { type: 'text' }
import repository0001 from './repository/0001_repository_identity.sql' with { type: 'text' }
import repository0002 from './repository/0002_graph.sql' with { type: 'text' }
import repository0003 from './repository/0003_graph_imports.sql' with { type: 'text' }
import repository0004 from './repository/0004_annotation_order.sql' with { type: 'text' }
import repository0005 from './repository/0005_graph_counts.sql' with { type: 'text' }
import repository0006 from './repository/0006_full_text_search.sql' with { type: 'text' }
import repository0007 from './repository/0007_embedding_changes.sql' with { type: 'text' }
import repository0008 from './repository/0008_fact_documents.sql' with { type: 'text' }
import repository0009 from './repository/0009_summary_citations.sql' with { type: 'text' }
import repository0010 from './repository/0010_fact_hash_check.sql' with { type: 'text' }
import repository0011 from './repository/0011_fact_document_function.sql' with { type: 'text' }
import repository0012 from './repository/0012_source_ingest.sql' with { type: 'text' }
import repository0013 from './repository/0013_fact_merges.sql' with { type: 'text' }

export interface Migration {
  version: number
  name: string
  sql: string
}

export type MigrationSet = 'system' | 'repository'

export const MIGRATIONS: Record<MigrationSet, readonly Migration[]> = {
  system: [
    { version: 1, name: '0001_repository_databases', sql: system0001 },
    { version: 2, name: '0002_accounts', sql: system0002 },
    { version: 3, name: '0003_role_assignments', sql: system0003 },
    { version: 4, name: '0004_repositories', sql: system0004 },
    { version: 5, name: '0005_oauth_clients', sql: system0005 },
    { version: 6, name: '0006_oauth_authorizations', sql: system0006 },
    { version: 7, name: '0007_oauth_codes', sql: system0007 },
    { version: 8, name: '0008_oauth_tokens', sql: system0008 },
    { version: 9, name: '0009_jobs', sql: system0009 },
    { version: 10, name: '0010_graphs', sql: system0010 },
    { version: 11, name: '0011_session_ends', sql: system0011 },
    { version: 12, name: '0012_session_idle', sql: system0012 },
    { version: 13, name: '0013_graph_owner_email', sql: system0013 },
    { version: 14, name: '0014_oauth_bindings', sql: system0014 },
    { version: 15, name: '0015_job_turns', sql: system0015 },
    { version: 16, name: '0016_oauth_first_party', sql: system0016 },
    { version: 17, name: '0017_repository_counts', sql: system0017 },
    { version: 18, name: '0018_oauth_client_metadata_documents', sql: system0018 },
    { version: 19, name: '0019_repository_counts_version', sql: system0019 },
    { version: 20, name: '0020_oauth_app_sessions', sql: system0020 },
    { version: 21, name: '0021_invitations', sql: system0021 },
  ],
  repository: [
    { version: 1, name: '0001_repository_identity', sql: repository0001 },
    { version: 2, name: '0002_graph', sql: repository0002 },
    { version: 3, name: '0003_graph_imports', sql: repository0003 },
    { version: 4, name: '0004_annotation_order', sql: repository0004 },
    { version: 5, name: '0005_graph_counts', sql: repository0005 },
    { version: 6, name: '0006_full_text_search', sql: repository0006 },
    { version: 7, name: '0007_embedding_changes', sql: repository0007 },
    { version: 8, name: '0008_fact_documents', sql: repository0008 },
    { version: 9, name: '0009_summary_citations', sql: repository0009 },
    { version: 10, name: '0010_fact_hash_check', sql: repository0010 },
    { version: 11, name: '0011_fact_document_function', sql: repository0011 },
    { version: 12, name: '0012_source_ingest', sql: repository0012 },
    { version: 13, name: '0013_fact_merges', sql: repository0013 },
  ],
}
