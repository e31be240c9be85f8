-- A fact's full-text document as one function, so that the trigger of 0008 and the import's bulk
-- load (src/bundle/transfer/import-indexes.ts, which computes every document in one parallel
-- statement after the rows) cannot disagree. IMMUTABLE and a single SELECT: PostgreSQL inlines it.
CREATE FUNCTION fact_document(text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT to_tsvector('english'::regconfig, $1) $$;

CREATE OR REPLACE FUNCTION fact_documents_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Each branch names only the transition tables its event has (plpgsql plans a statement
  -- when it first runs it).
  IF TG_OP = 'INSERT' THEN
    INSERT INTO fact_documents (id, fulltext) SELECT id, fact_document(text) FROM new_rows;
  ELSE
    UPDATE fact_documents SET fulltext = fact_document(changed.text)
    FROM (SELECT n.id, n.text FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE n.text IS DISTINCT FROM o.text) changed
    WHERE fact_documents.id = changed.id;
  END IF;
  RETURN NULL;
END
$$;
