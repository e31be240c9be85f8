-- How many sources, facts, concepts, reports and investigations the repository holds, without
-- counting them on every request. Statement-level triggers record each INSERT's and DELETE's net
-- change (cascades included) as a row here: one row per statement, so a bulk import's batch
-- costs one insert, and rows are only ever added, so concurrent writers never wait for each other
-- (one counter row would be locked by an import's transaction until it commits). The sum per
-- kind is the count; repositories/counts.ts folds the rows into one per kind as it reads them.
CREATE TABLE graph_count_changes (
  kind text NOT NULL CHECK (kind IN ('sources', 'facts', 'concepts', 'reports', 'investigations')),
  delta bigint NOT NULL
);

CREATE FUNCTION graph_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO graph_count_changes (kind, delta) SELECT TG_TABLE_NAME, count(*) FROM new_rows HAVING count(*) > 0;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO graph_count_changes (kind, delta) SELECT TG_TABLE_NAME, -count(*) FROM old_rows HAVING count(*) > 0;
  ELSE
    -- TRUNCATE: the table is locked against every other writer, so what is recorded is all it held.
    INSERT INTO graph_count_changes (kind, delta) SELECT TG_TABLE_NAME, -sum(delta) FROM graph_count_changes WHERE kind = TG_TABLE_NAME HAVING sum(delta) <> 0;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER sources_counted_insert AFTER INSERT ON sources REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER sources_counted_delete AFTER DELETE ON sources REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER sources_counted_truncate AFTER TRUNCATE ON sources FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER facts_counted_insert AFTER INSERT ON facts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER facts_counted_delete AFTER DELETE ON facts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER facts_counted_truncate AFTER TRUNCATE ON facts FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER concepts_counted_insert AFTER INSERT ON concepts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER concepts_counted_delete AFTER DELETE ON concepts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER concepts_counted_truncate AFTER TRUNCATE ON concepts FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER reports_counted_insert AFTER INSERT ON reports REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER reports_counted_delete AFTER DELETE ON reports REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER reports_counted_truncate AFTER TRUNCATE ON reports FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER investigations_counted_insert AFTER INSERT ON investigations REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER investigations_counted_delete AFTER DELETE ON investigations REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();
CREATE TRIGGER investigations_counted_truncate AFTER TRUNCATE ON investigations FOR EACH STATEMENT EXECUTE FUNCTION graph_count_change();

-- What the tables already hold (a repository migrated from an earlier version).
INSERT INTO graph_count_changes (kind, delta)
SELECT 'sources', count(*) FROM sources UNION ALL
SELECT 'facts', count(*) FROM facts UNION ALL
SELECT 'concepts', count(*) FROM concepts UNION ALL
SELECT 'reports', count(*) FROM reports UNION ALL
SELECT 'investigations', count(*) FROM investigations;
