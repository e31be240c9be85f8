-- Fair claiming: a claim takes the oldest ready job of the repository served least recently,
-- so one repository's hundred jobs do not hold back everyone else's. served_at is the time of
-- the repository's latest claim.
CREATE TABLE job_turns (
  repository_id uuid PRIMARY KEY REFERENCES repositories (id) ON DELETE CASCADE,
  served_at timestamptz NOT NULL
);
-- A repository's jobs outlive it: deleting it cancels them first, and how they ended stays
-- readable (to sysadmins, as jobs of no repository).
ALTER TABLE jobs DROP CONSTRAINT jobs_repository_id_fkey;
ALTER TABLE jobs ADD CONSTRAINT jobs_repository_id_fkey FOREIGN KEY (repository_id) REFERENCES repositories (id) ON DELETE SET NULL;
