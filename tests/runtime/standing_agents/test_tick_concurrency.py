"""The tenant's tick cap in the store (runtime/standing_agents/ticks.begin_tick): N
concurrent begins of one tenant lease at most the cap; another tenant is not counted; a
lease older than the stale time (its workflow died mid-tick) no longer counts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

from runtime.settings import Settings
from runtime.standing_agents.contracts import AgentType, EventKind
from runtime.standing_agents.models import AgentInstance
from runtime.standing_agents.ticks import begin_tick
from runtime.standing_agents.workflow_contracts import BeginTickInput, EventRef
from runtime.store import Store
from tests.workflows import standing_agent_support as sa

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)


def _begin(store: Store, settings: Settings, instance_id: str, tenant: str = sa.TENANT) -> bool:
    request = BeginTickInput(
        tenant=tenant,
        instance_id=instance_id,
        agent_type=AgentType.SOA,
        generation=0,
        event=EventRef(
            event_id=f"init/{instance_id}/0", sequence_number=1, kind=EventKind.AGENT_INITIALIZED
        ),
        now=NOW,
    )
    result = begin_tick(store, settings, request)
    assert result.leased or result.throttled
    return result.leased


def test_concurrent_begins_lease_at_most_the_cap(store: Store, tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path, workspace=tmp_path, max_concurrent_instances_per_tenant=4
    )
    agents = [sa.create_instance(store, NOW) for _ in range(10)]
    with ThreadPoolExecutor(max_workers=10) as pool:
        leased = list(pool.map(lambda a: _begin(store, settings, a), agents))
    assert sum(leased) == 4
    # A retried begin of a leased tick is leased again (its own lease is not counted).
    first = agents[leased.index(True)]
    assert _begin(store, settings, first)
    # A lease older than the stale time does not count: one more agent may tick.
    with store.session() as db:
        row = db.get(AgentInstance, first)
        assert row is not None
        row.tick_started_at = NOW - timedelta(hours=1)
        db.add(row)
        db.commit()
    waiting = [a for a, ok in zip(agents, leased, strict=True) if not ok]
    assert _begin(store, settings, waiting[0])
    assert not _begin(store, settings, waiting[1])
