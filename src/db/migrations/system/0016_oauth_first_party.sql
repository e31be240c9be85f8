-- kgs's own OAuth clients (Swagger UI, the web app): registered by kgs itself, never through
-- dynamic registration, so the consent page may vouch for them and the purge of unused clients
-- leaves them alone.
ALTER TABLE oauth_clients ADD COLUMN first_party boolean NOT NULL DEFAULT false;
UPDATE oauth_clients SET first_party = true WHERE id = 'kgs-swagger-ui-builtin';
