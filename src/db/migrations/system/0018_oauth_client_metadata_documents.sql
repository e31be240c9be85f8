-- A client whose client_id is the https URL of its metadata document (oauth/client-metadata.ts) is
-- mirrored here, so that authorizations, codes and grants can refer to it like any other client.
ALTER TABLE oauth_clients DROP CONSTRAINT oauth_clients_id_check;
ALTER TABLE oauth_clients ADD CONSTRAINT oauth_clients_id_check
  CHECK (id ~ '^[A-Za-z0-9_-]{22,64}$' OR (id LIKE 'https://%' AND length(id) <= 2000));
