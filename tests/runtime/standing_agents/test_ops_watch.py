"""An ops incident wakes the SOA (issue 21, item 3; runtime/standing_agents/ops_watch.py and
ops_digest.py): a change of the digest's bucket queues one tick, visible now, per Active
SOA of the tenant, deduplicated per transition whatever the number of observers; the
digest counts the visibility's failed workflows, an error spike and the journal lag."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from sqlmodel import col, select

from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents import heartbeats, ops_watch
from runtime.standing_agents.contracts import AgentType, DecisionKind, EventKind
from runtime.standing_agents.models import AgentEventRow, AgentLedgerTurn
from runtime.standing_agents.ops_digest import probe
from runtime.store import Store
from tests.workflows import standing_agent_support as sa

NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)


def _fail_calls(store: Store, n: int, at: datetime) -> None:
    with store.session() as db:
        for i in range(n):
            db.add(
                LlmCallAttempt(
                    attempt_id=f"fail-{at.isoformat()}-{i}",
                    call_id=f"c-{i}",
                    tenant=sa.TENANT,
                    owner_kind="agent",
                    owner_id="x",
                    site="Agent:Planning",
                    provider="p",
                    requested_model="m",
                    outcome="server_error",
                    created_at=at,
                )
            )
        db.commit()


def _ops_ticks(store: Store, instance_id: str) -> list[AgentEventRow]:
    with store.session() as db:
        return list(
            db.exec(
                select(AgentEventRow)
                .where(
                    col(AgentEventRow.instance_id) == instance_id,
                    col(AgentEventRow.event_id).startswith("ops/"),
                )
                .order_by(col(AgentEventRow.sequence_number))
            ).all()
        )


def test_a_bucket_transition_queues_one_tick_per_active_soa_once(store: Store) -> None:
    soa = sa.create_instance(store, NOW)
    compliance = sa.create_instance(store, NOW, agent_type=AgentType.COMPLIANCE)
    # The first observation records the bucket and wakes no one.
    assert ops_watch.observe(store, sa.TENANT, NOW) == []
    assert ops_watch.observe(store, sa.TENANT, NOW) == []
    _fail_calls(store, 2, NOW)  # degraded
    later = NOW + timedelta(minutes=2)  # past the bucket's dwell
    with ThreadPoolExecutor(max_workers=4) as pool:  # four API processes at once
        woken = list(pool.map(lambda _: ops_watch.observe(store, sa.TENANT, later), range(4)))
    assert sorted(len(w) for w in woken) == [0, 0, 0, 1]
    (tick,) = _ops_ticks(store, soa)
    assert tick.event_kind == EventKind.AGENT_TICK.value
    assert tick.payload == {"opsBucket": {"from": "healthy", "to": "degraded", "transition": 1}}
    assert sa.aware(tick.visible_at) == later and tick.consumed_at is None
    assert _ops_ticks(store, compliance) == []  # the SOA's alone
    # Back to healthy a day later: the next transition, its own tick.
    back = NOW + timedelta(days=1, minutes=1)
    assert [w.instance_id for w in ops_watch.observe(store, sa.TENANT, back)] == [soa]
    payloads = [t.payload["opsBucket"]["to"] for t in _ops_ticks(store, soa)]
    assert payloads == ["degraded", "healthy"]
    # The later transition superseded the earlier tick still queued: one is due.
    assert [t.consumed_at is None for t in _ops_ticks(store, soa)] == [False, True]
    # A flap within the dwell is no transition (a bucket flapping wakes nobody twice).
    _fail_calls(store, 1, back)
    assert ops_watch.observe(store, sa.TENANT, back + timedelta(seconds=20)) == []


def test_a_ticks_completion_does_not_consume_an_ops_tick(store: Store) -> None:
    soa = sa.create_instance(store, NOW)
    ops_watch.observe(store, sa.TENANT, NOW)
    _fail_calls(store, 1, NOW)
    ops_watch.observe(store, sa.TENANT, NOW + timedelta(minutes=2))
    with store.session() as db:
        heartbeats.consume_heartbeats(db, soa, NOW)
        db.commit()
    (tick,) = _ops_ticks(store, soa)
    assert tick.consumed_at is None


def test_the_digest_counts_workflows_spikes_and_journal_lag(store: Store) -> None:
    assert probe(store, sa.TENANT, NOW)["bucket"] == "healthy"
    ops_watch.record_visibility(store, sa.TENANT, NOW, failed=1, timed_out=0)
    digest = probe(store, sa.TENANT, NOW)
    assert (digest["failedWorkflows"], digest["timedOutWorkflows"]) == (1, 0)
    assert digest["bucket"] == "degraded"
    ops_watch.record_visibility(store, sa.TENANT, NOW, failed=3, timed_out=2)
    assert probe(store, sa.TENANT, NOW)["bucket"] == "failing"
    ops_watch.record_visibility(store, sa.TENANT, NOW, failed=0, timed_out=0)
    # A spike: six errors in the last quarter hour against none the hour before.
    _fail_calls(store, 6, NOW - timedelta(minutes=5))
    spiking = probe(store, sa.TENANT, NOW)
    assert spiking["recentErrors"] == 6 and spiking["errorSpike"] is True
    assert spiking["bucket"] == "failing"
    # Half an hour later they are no longer recent: no spike.
    calm = probe(store, sa.TENANT, NOW + timedelta(minutes=30))
    assert calm["errorSpike"] is False


def test_a_turn_missing_its_journal_entry_is_journal_lag(store: Store) -> None:
    agent = sa.create_instance(store, NOW)
    with store.session() as db:
        db.add(
            AgentLedgerTurn(
                instance_id=agent,
                tenant=sa.TENANT,
                seq=1,
                event_id="e-1",
                event_kind=EventKind.AGENT_TICK.value,
                decision_kind=DecisionKind.HEARTBEAT.value,
                plan_input_hash="h",
                generation=0,
                created_at=NOW - timedelta(minutes=10),
                hash="x",
            )
        )
        db.commit()
    lagging = probe(store, sa.TENANT, NOW)
    assert lagging["journalLagSeconds"] == 600.0 and lagging["bucket"] == "degraded"
