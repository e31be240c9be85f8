-- The graph record's owner as the Go registry records it (bundle.md §7): the pusher's e-mail in
-- owner, their user id in owner_id; a push by the service token alone is owner 'kgs', owner_id NULL.
-- owner_id has no foreign key: like the e-mail, it records who pushed, and outlives the account.
ALTER TABLE graphs ADD COLUMN owner_id uuid;
-- Rows from before held the user id in owner: it moves to owner_id, and owner takes the user's
-- e-mail. The id of an account deleted since stays in owner too: there is no e-mail left to use.
UPDATE graphs SET owner_id = owner::uuid
WHERE owner ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
UPDATE graphs SET owner = users.email FROM users WHERE users.id = graphs.owner_id;
-- The registry quota counts a user's graphs by owner_id (QUOTA_REGISTRY_*).
CREATE INDEX graphs_owner_id ON graphs (owner_id);
