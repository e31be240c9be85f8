-- A copy of each repository's graph counts (its database's graph_count_changes, summed), so a
-- list of repositories answers with them without opening one database per repository. Refreshed
-- after every change: by the request that wrote, by the job that imported (repositories/counts.ts).
-- A repository without a row has not been counted since it was migrated; it is at its first read.
CREATE TABLE repository_counts (
  repository_id uuid PRIMARY KEY REFERENCES repositories (id) ON DELETE CASCADE,
  sources bigint NOT NULL CHECK (sources >= 0),
  facts bigint NOT NULL CHECK (facts >= 0),
  concepts bigint NOT NULL CHECK (concepts >= 0),
  reports bigint NOT NULL CHECK (reports >= 0),
  investigations bigint NOT NULL CHECK (investigations >= 0),
  counted_at timestamptz NOT NULL DEFAULT now()
);
