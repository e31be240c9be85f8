-- The job queue (bundle.md §6). Workers of every instance claim queued jobs with
-- FOR UPDATE SKIP LOCKED and hold a lease they renew by heartbeat; a job whose lease ran out
-- (its worker died) is queued again by whichever instance notices first.
CREATE TABLE jobs (
  id uuid PRIMARY KEY,
  kind text NOT NULL CHECK (kind ~ '^[a-z][a-z0-9_]{0,62}$'),
  repository_id uuid REFERENCES repositories (id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  params jsonb NOT NULL DEFAULT '{}',
  progress jsonb NOT NULL DEFAULT '{"phase": "queued", "done": 0, "total": 0, "bytes": 0}',
  result jsonb,
  error text,
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts integer NOT NULL CHECK (max_attempts >= 1),
  -- Not before this time: the backoff after a failed attempt.
  run_after timestamptz NOT NULL DEFAULT now(),
  -- The worker holding the job and until when; set exactly while status = 'running'.
  lease_owner text,
  lease_expires_at timestamptz,
  cancel_requested boolean NOT NULL DEFAULT false,
  -- The worker of the latest claim, kept after it finishes: which instance ran what.
  claimed_by text,
  created_by uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  CHECK ((status = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
);
-- Claiming walks queued jobs in order of readiness.
CREATE INDEX jobs_claimable ON jobs (run_after, created_at) WHERE status = 'queued';
-- The reaper looks for running jobs whose lease has expired.
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_created_at_id ON jobs (created_at, id);
CREATE INDEX jobs_repository_created_at_id ON jobs (repository_id, created_at, id);
-- A queue churns: every job is updated several times. Vacuum and analyze it often, so the claim
-- index does not fill with dead entries and the planner knows how many jobs are waiting.
ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
