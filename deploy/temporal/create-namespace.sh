#!/bin/sh
# The namespace job of docker-compose.yml (image temporalio/admin-tools).
#
# Waits for the Temporal frontend, creates agentrt's namespace, then registers
# agentrt's custom search attributes on it (AGENTRT_SEARCH_ATTRIBUTES: a
# space-separated list of Name=Type, the same set as SEARCH_ATTRIBUTES in
# runtime/temporal.py). Idempotent: the job runs on each `docker compose up`.
set -eu

ADDRESS=${TEMPORAL_ADDRESS:-temporal:7233}
NAMESPACE=${TEMPORAL_NAMESPACE:-default}
RETENTION=${NAMESPACE_RETENTION:-72h}
: "${AGENTRT_SEARCH_ATTRIBUTES:?AGENTRT_SEARCH_ATTRIBUTES (Name=Type ...) is required}"
MAX_ATTEMPTS=${MAX_ATTEMPTS:-60}
SLEEP_SECONDS=${SLEEP_SECONDS:-2}

retry() {  # retry <what> <command> [args...]: until it succeeds or attempts run out
  what=$1
  shift
  attempt=1
  until "$@"; do
    if [ "$attempt" -ge "$MAX_ATTEMPTS" ]; then
      echo "gave up: $what ($MAX_ATTEMPTS attempts)" >&2
      exit 1
    fi
    echo "not yet: $what (attempt $attempt/$MAX_ATTEMPTS)"
    attempt=$((attempt + 1))
    sleep "$SLEEP_SECONDS"
  done
}

ensure_namespace() {
  if temporal operator namespace describe --namespace "$NAMESPACE" --address "$ADDRESS" \
    >/dev/null 2>&1; then
    return 0
  fi
  temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION" \
    --address "$ADDRESS"
}

list_search_attributes() {
  temporal operator search-attribute list --namespace "$NAMESPACE" --address "$ADDRESS" \
    --output json
}

ensure_search_attributes() {
  # A freshly created namespace can take a few seconds to reach every frontend
  # cache: the list fails until then, and the caller retries.
  existing=$(list_search_attributes) || return 1
  for pair in $AGENTRT_SEARCH_ATTRIBUTES; do
    name=${pair%%=*}
    type=${pair#*=}
    if printf '%s' "$existing" | grep -q "\"$name\""; then
      continue
    fi
    echo "search attribute $name ($type): create"
    temporal operator search-attribute create --namespace "$NAMESPACE" --address "$ADDRESS" \
      --name "$name" --type "$type" || return 1
  done
}

search_attributes_listed() {
  existing=$(list_search_attributes) || return 1
  for pair in $AGENTRT_SEARCH_ATTRIBUTES; do
    printf '%s' "$existing" | grep -q "\"${pair%%=*}\"" || return 1
  done
}

retry "Temporal frontend at $ADDRESS healthy" \
  temporal operator cluster health --address "$ADDRESS"
retry "namespace $NAMESPACE" ensure_namespace
retry "search attributes on $NAMESPACE" ensure_search_attributes
retry "search attributes listed on $NAMESPACE" search_attributes_listed
echo "namespace $NAMESPACE ready with search attributes: $AGENTRT_SEARCH_ATTRIBUTES"
