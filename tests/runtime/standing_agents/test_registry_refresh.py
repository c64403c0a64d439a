"""A registered coder's any call is its heartbeat (registry_store.refresh_by): its live
entries are refreshed, an expired one stays expired, another coder's are untouched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runtime.standing_agents import registry_store
from runtime.standing_agents.models import RegistryEntry
from runtime.store import Store
from runtime.timestamps import aware_utc

TTL = timedelta(minutes=5)


def _age(store: Store, agent_id: str, by: timedelta) -> None:
    with store.session() as db:
        row = db.get(RegistryEntry, ("acme", agent_id))
        assert row is not None
        row.last_heartbeat_at = datetime.now(UTC) - by
        db.add(row)
        db.commit()


def _age_of(store: Store, agent_id: str) -> timedelta:
    with store.session() as db:
        row = db.get(RegistryEntry, ("acme", agent_id))
        assert row is not None
        return datetime.now(UTC) - aware_utc(row.last_heartbeat_at)


def test_a_coders_call_refreshes_its_live_entries_only(store: Store) -> None:
    for agent_id, by in (("a-1", "coder:alice"), ("a-2", "coder:alice"), ("b-1", "coder:bob")):
        registry_store.register(store, "acme", agent_id, "Coder", ["python"], None, by)
    _age(store, "a-1", timedelta(minutes=4))
    _age(store, "a-2", timedelta(minutes=6))  # expired: it must register again
    _age(store, "b-1", timedelta(minutes=4))
    assert registry_store.refresh_by(store, "acme", "coder:alice", TTL) == 1
    assert _age_of(store, "a-1") < timedelta(minutes=1)
    assert _age_of(store, "a-2") > timedelta(minutes=5)
    assert _age_of(store, "b-1") > timedelta(minutes=3)  # bob's call did not happen
    assert registry_store.live_entry(store, "acme", "a-1", TTL, "coder:alice") is not None
    assert registry_store.live_entry(store, "acme", "a-2", TTL, "coder:alice") is None
