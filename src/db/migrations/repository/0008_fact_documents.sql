-- Keyword search of facts reads their full-text documents from a table of their own: ranking a
-- query's matches (ts_rank) reads each match's document, and a query of a common word matches
-- thousands of facts spread over the whole table. Stored on the facts rows (0006), those reads
-- fetched the wide rows' pages; this table holds only (id, document), under half their size, so
-- it stays in the server's cache where the facts table would not (docs/benchmarks.md, "Search").
-- A trigger keeps it current whoever writes facts (the import, the write routes, a hand-run
-- INSERT): one statement per writing statement, whatever its number of rows.
CREATE TABLE fact_documents (
  id uuid PRIMARY KEY REFERENCES facts (id) ON DELETE CASCADE,
  fulltext tsvector NOT NULL
);

-- The documents of the facts already stored (0006's column computed them), before the index.
INSERT INTO fact_documents (id, fulltext) SELECT id, fulltext FROM facts;
ALTER TABLE facts DROP COLUMN fulltext;
CREATE INDEX fact_documents_fulltext ON fact_documents USING gin (fulltext) WITH (gin_pending_list_limit = 256);

CREATE FUNCTION fact_documents_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Each branch names only the transition tables its event has (plpgsql plans a statement
  -- when it first runs it). The configuration is 0006's, which src/search/store.ts queries in.
  IF TG_OP = 'INSERT' THEN
    INSERT INTO fact_documents (id, fulltext) SELECT id, to_tsvector('english'::regconfig, text) FROM new_rows;
  ELSE
    UPDATE fact_documents SET fulltext = to_tsvector('english'::regconfig, changed.text)
    FROM (SELECT n.id, n.text FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE n.text IS DISTINCT FROM o.text) changed
    WHERE fact_documents.id = changed.id;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER facts_documents_inserted AFTER INSERT ON facts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION fact_documents_write();
CREATE TRIGGER facts_documents_updated AFTER UPDATE ON facts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION fact_documents_write();
