-- Which read of the repository's database a copy holds: the id of the transaction that read it
-- there (repositories/counts.ts), so a copy is never replaced by one read earlier. The refresh no
-- longer waits on the repository's database inside a transaction of the system database.
ALTER TABLE repository_counts ADD COLUMN counted_version bigint;
