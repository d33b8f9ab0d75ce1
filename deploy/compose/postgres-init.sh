#!/usr/bin/env bash
# PostgreSQL init for docker-compose.yml: run once by the postgres image, as its superuser, when the data volume is
# new (/docker-entrypoint-initdb.d). Creates the two roles of the service, like the local stack does:
#   fulfilment_owner  owns the database and, once `fulfilment provision` ran, its tables (DATABASE_MIGRATION_URL);
#   fulfilment        the runtime role the worker and the bridge connect as (DATABASE_URL): owns nothing, cannot
#                     bypass row-level security; provisioning grants it exactly what the service needs.
# The passwords come from .env (deploy/compose/example.env) through the postgres service's environment. A changed
# password in .env does not reach an existing volume: ALTER ROLE by hand, or start afresh (docker compose down -v).
set -euo pipefail

: "${FULFILMENT_OWNER_PASSWORD:?is not set: copy deploy/compose/example.env to .env and fill in the passwords}"
: "${FULFILMENT_DB_PASSWORD:?is not set: copy deploy/compose/example.env to .env and fill in the passwords}"

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v db="$POSTGRES_DB" -v owner_password="$FULFILMENT_OWNER_PASSWORD" -v runtime_password="$FULFILMENT_DB_PASSWORD" <<'SQL'
CREATE ROLE fulfilment_owner LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'owner_password';
CREATE ROLE fulfilment LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'runtime_password';
-- The database's owner owns the public schema's CREATE right (pg_database_owner), so the migrations can run as it.
ALTER DATABASE :"db" OWNER TO fulfilment_owner;
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"db" TO fulfilment_owner;
GRANT CONNECT ON DATABASE :"db" TO fulfilment;
SQL
