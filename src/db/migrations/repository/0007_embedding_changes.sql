-- Facts and concepts written through the API (graph/write/) whose vectors are out of date:
-- created, edited or deleted since they were last embedded. The embed_changes job
-- (vectors/embed-jobs.ts) takes them in batches, embeds the rows that exist, removes the vectors
-- of those that do not, and deletes each mark it handled unless the row changed again meanwhile
-- (changed_at moved on), so no edit is lost to a job that read the row before it.
CREATE TABLE embedding_changes (
  kind text NOT NULL CHECK (kind IN ('facts', 'concepts')),
  id uuid NOT NULL,
  changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (kind, id)
);
