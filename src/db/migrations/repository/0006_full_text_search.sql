-- Keyword search (src/search/): full-text documents kept by PostgreSQL itself, so every writer
-- (the import, the graph's write routes, a hand-run INSERT) keeps them current without knowing
-- of search. The configuration is 'english' (docs/api.md, "Search", says why); a query must
-- use the same one (src/search/store.ts) for the GIN indexes to serve it.

-- GIN indexes take new entries into a pending list, merged into the index in bulk once it
-- passes gin_pending_list_limit (or by vacuum), and every search reads the whole list: at the
-- default 4 MB that was most of a search's time after an import. 256 kB bounds it and keeps
-- the merges in bulk.

-- A fact's document is its text.
ALTER TABLE facts ADD COLUMN fulltext tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED;
CREATE INDEX facts_fulltext ON facts USING gin (fulltext) WITH (gin_pending_list_limit = 256);

-- A concept's document weighs its name (A) over its aliases (B) over its description (C). The
-- aliases live in their own table, which a generated column cannot read: aliases_text is their
-- copy on the concept's row, kept by the statement-level triggers below (one UPDATE per
-- statement of concept_aliases, whatever its number of rows).
ALTER TABLE concepts ADD COLUMN aliases_text text NOT NULL DEFAULT '';
ALTER TABLE concepts ADD COLUMN fulltext tsvector GENERATED ALWAYS AS (
  setweight(to_tsvector('english'::regconfig, canonical_name), 'A') ||
  setweight(to_tsvector('english'::regconfig, aliases_text), 'B') ||
  setweight(to_tsvector('english'::regconfig, description), 'C')
) STORED;
CREATE INDEX concepts_fulltext ON concepts USING gin (fulltext) WITH (gin_pending_list_limit = 256);

CREATE FUNCTION concepts_refresh_aliases_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Each branch names only the transition tables its event has (plpgsql plans a statement
  -- when it first runs it).
  IF TG_OP = 'INSERT' THEN
    UPDATE concepts SET aliases_text = coalesce((SELECT string_agg(alias_text, ' ' ORDER BY alias_text) FROM concept_aliases WHERE concept_id = concepts.id), '')
    WHERE id IN (SELECT concept_id FROM new_rows);
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE concepts SET aliases_text = coalesce((SELECT string_agg(alias_text, ' ' ORDER BY alias_text) FROM concept_aliases WHERE concept_id = concepts.id), '')
    WHERE id IN (SELECT concept_id FROM old_rows);
  ELSE
    UPDATE concepts SET aliases_text = coalesce((SELECT string_agg(alias_text, ' ' ORDER BY alias_text) FROM concept_aliases WHERE concept_id = concepts.id), '')
    WHERE id IN (SELECT concept_id FROM old_rows UNION SELECT concept_id FROM new_rows);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER concept_aliases_inserted AFTER INSERT ON concept_aliases REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION concepts_refresh_aliases_text();
CREATE TRIGGER concept_aliases_deleted AFTER DELETE ON concept_aliases REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION concepts_refresh_aliases_text();
CREATE TRIGGER concept_aliases_updated AFTER UPDATE ON concept_aliases REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION concepts_refresh_aliases_text();

-- Aliases already stored when this migration runs.
UPDATE concepts SET aliases_text = aliases.text
FROM (SELECT concept_id, string_agg(alias_text, ' ' ORDER BY alias_text) AS text FROM concept_aliases GROUP BY concept_id) aliases
WHERE aliases.concept_id = concepts.id;
