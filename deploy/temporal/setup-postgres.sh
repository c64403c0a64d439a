#!/bin/sh
# The schema set-up job of docker-compose.yml (image temporalio/admin-tools).
#
# Creates Temporal's two databases (`temporal`, `temporal_visibility`), brings
# their schemas to the newest version shipped in the image, then creates
# agentrt's own database (its tables come from agentrt's migrations, applied
# by the API and the worker at start). Every step is idempotent: the job runs
# on each `docker compose up`, and on a data volume from an older release it
# upgrades the schemas before the new server starts.
set -eu

: "${POSTGRES_SEEDS:?POSTGRES_SEEDS (the PostgreSQL host) is required}"
: "${POSTGRES_USER:?POSTGRES_USER is required}"
: "${SQL_PASSWORD:?SQL_PASSWORD (read by temporal-sql-tool) is required}"
DB=${DB:-postgres12}
DB_PORT=${DB_PORT:-5432}
AGENTRT_DB=${AGENTRT_DB:-agentrt}
SCHEMA_DIR=${SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}
MAX_ATTEMPTS=${MAX_ATTEMPTS:-60}
SLEEP_SECONDS=${SLEEP_SECONDS:-2}

sql_tool() {  # sql_tool <database> <command> [args...]
  database=$1
  shift
  temporal-sql-tool --plugin "$DB" --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" \
    --db "$database" "$@"
}

echo "waiting for PostgreSQL at $POSTGRES_SEEDS:$DB_PORT"
attempt=1
until nc -z -w 5 "$POSTGRES_SEEDS" "$DB_PORT"; do
  if [ "$attempt" -ge "$MAX_ATTEMPTS" ]; then
    echo "PostgreSQL did not answer after $MAX_ATTEMPTS attempts" >&2
    exit 1
  fi
  attempt=$((attempt + 1))
  sleep "$SLEEP_SECONDS"
done

for pair in temporal:temporal temporal_visibility:visibility; do
  database=${pair%%:*}
  schema=${pair#*:}
  echo "database $database: create, set up, update schema ($SCHEMA_DIR/$schema)"
  sql_tool "$database" create
  sql_tool "$database" setup-schema -v 0.0
  sql_tool "$database" update-schema -d "$SCHEMA_DIR/$schema/versioned"
done

echo "database $AGENTRT_DB: create"
sql_tool "$AGENTRT_DB" create

echo "schema set-up complete"
