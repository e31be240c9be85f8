-- Role assignments (RBAC with domains). domain is 'system' or a repository UUID. The unique
-- key makes assigning idempotent.
CREATE TABLE role_assignments (
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('sysadmin', 'member', 'repoadmin', 'editor', 'curator', 'viewer')),
  domain text NOT NULL CHECK (domain = 'system' OR domain ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, role, domain),
  CHECK ((domain = 'system') = (role IN ('sysadmin', 'member')))
);
CREATE INDEX role_assignments_domain ON role_assignments (domain);

-- Bumped in the same transaction as every change, so an instance that missed a notification
-- sees on its next periodic check that its enforcer is stale.
CREATE TABLE rbac_version (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version bigint NOT NULL
);
INSERT INTO rbac_version (version) VALUES (0);
