"""Issue 18, item 12: the store's read-then-write races, fired with threads released at
once by a barrier, on SQLite and PostgreSQL (the `store` fixture).

(a) concurrent first writes of a tenant feature or an agent config key never fail (an
    upsert); (b) concurrent mode changes are each audited once, in a chain where every
    change starts from the mode the one before set; (c) concurrent SOA task proposals
    and session creates never make more sessions live than the cap.

Each race is repeated: a check-then-write that is not atomic loses on some round (on
PostgreSQL, where transactions interleave); an atomic one can never fail an assertion.
Nothing here depends on timing.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import TypeVar

import pytest
from sqlmodel import col, select

from runtime.coding_tasks.contracts import task_session_id
from runtime.coding_tasks.models import CodingTask
from runtime.llm import pricing
from runtime.llm.models import LlmPrice
from runtime.llm.pricing import Price
from runtime.sessions import registry
from runtime.sessions.models import DaemonSession
from runtime.standing_agents import configs, control, task_proposals, tool_context
from runtime.standing_agents.contracts import AgentStatus, AgentType, ModeChangeSource
from runtime.standing_agents.models import AgentInstance, SystemConfig
from runtime.standing_agents.modes import allowed_modes, apply_mode_change, mode_changes
from runtime.store import Store
from runtime.store.tenants import TenantFeature, feature_enabled, set_feature

THREADS = 8
ROUNDS = 5

T = TypeVar("T")
UI = ModeChangeSource.UI


def race(calls: list[Callable[[], T]]) -> list[T | BaseException]:
    """Run every call on its own thread, all released together; results or exceptions."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], T]) -> T | BaseException:
        barrier.wait()
        try:
            return call()
        except Exception as err:  # collected: the test asserts on them
            return err

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def _tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


# -- (a) upserts ----------------------------------------------------------------------------


@pytest.mark.parametrize("feature", ["standing-agents", "windows-pool"])
def test_concurrent_first_writes_of_a_feature_all_succeed(store: Store, feature: str) -> None:
    for _ in range(ROUNDS):
        tenant = _tenant()
        values = [n % 2 == 0 for n in range(THREADS)]
        results = race([partial(set_feature, store, tenant, feature, v) for v in values])
        assert [r for r in results if isinstance(r, BaseException)] == []
        with store.session() as db:
            rows = db.exec(select(TenantFeature).where(col(TenantFeature.tenant) == tenant)).all()
        assert len(rows) == 1
        assert feature_enabled(store, tenant, feature) in (True, False)
        # The flag keeps working after the race: the last write is what is read.
        set_feature(store, tenant, feature, True)
        assert feature_enabled(store, tenant, feature) is True
        assert set_feature(store, tenant, feature, False) is True  # the previous value


def test_concurrent_first_writes_of_a_config_key_all_succeed(store: Store) -> None:
    key = "AgentDispatcher:TickMaxTurns"
    for _ in range(ROUNDS):
        tenant = _tenant()
        values = list(range(10, 10 + THREADS))
        results = race([partial(configs.put_config, store, tenant, key, v) for v in values])
        written = [r for r in results if isinstance(r, SystemConfig)]
        assert len(written) == THREADS, [r for r in results if isinstance(r, BaseException)]
        assert sorted(row.value for row in written) == values  # each answers its own value
        row = configs.get_config(store, tenant, key)
        assert row is not None and row.value in values


def test_concurrent_first_saves_of_a_price_override_all_succeed(store: Store) -> None:
    """A PUT of a model's price is a merge: two first saves race on its key (on
    PostgreSQL the loser's insert fails); the loser runs again and overwrites."""
    for _ in range(ROUNDS):
        model = f"model-{uuid.uuid4().hex[:8]}"
        prices = [Price(input_per_mtok_usd=n, output_per_mtok_usd=n) for n in range(THREADS)]
        now = datetime.now(UTC)
        results = race([partial(pricing.put_price, store, model, p, now) for p in prices])
        assert [r for r in results if isinstance(r, BaseException)] == []
        with store.session() as db:
            row = db.get(LlmPrice, model)
        assert row is not None and row.input_per_mtok_usd in range(THREADS)


# -- (b) the mode-change audit ---------------------------------------------------------------


def test_concurrent_mode_changes_are_each_audited_once_in_a_chain(store: Store) -> None:
    modes = allowed_modes(store, AgentType.SOA)
    for _ in range(ROUNDS):
        tenant = _tenant()
        agent = control.create_instance(store, tenant, AgentType.SOA, AgentStatus.PAUSED)
        initial = agent.active_mode
        targets = [modes[n % len(modes)] for n in range(THREADS)]
        results = race(
            [
                partial(apply_mode_change, store, agent.instance_id, mode, UI, f"op-{n}")
                for n, mode in enumerate(targets)
            ]
        )
        assert [r for r in results if isinstance(r, BaseException)] == []
        changes = mode_changes(store, agent.instance_id)
        assert len(changes) == THREADS  # every change audited, once
        assert sorted(c.actor or "" for c in changes) == sorted(f"op-{n}" for n in range(THREADS))
        # No lost update: each change starts where the one before it ended.
        assert [c.from_mode for c in changes] == [initial] + [c.to_mode for c in changes[:-1]]
        with store.session() as db:
            row = db.get(AgentInstance, agent.instance_id)
        assert row is not None and row.active_mode == changes[-1].to_mode


# -- (c) the session cap ---------------------------------------------------------------------


def _context(store: Store, tenant: str, instance_id: str, op_id: str) -> tool_context.ToolContext:
    return tool_context.ToolContext(
        store=store,
        tenant=tenant,
        instance_id=instance_id,
        agent_type=AgentType.SOA,
        generation=0,
        op_id=op_id,
        now=datetime.now(UTC),
        investigation_workspace="demo",
        workspace_root=None,
    )


def _live(store: Store) -> int:
    return registry.count_live(store)


def _close_all(store: Store) -> None:
    with store.session() as db:
        for row in db.exec(select(DaemonSession).where(col(DaemonSession.closed_at).is_(None))):
            row.closed_at = datetime.now(UTC)
            db.add(row)
        db.commit()


@pytest.mark.parametrize("already_live", [0, 2])
def test_concurrent_task_proposals_never_exceed_the_session_cap(
    store: Store, already_live: int
) -> None:
    cap = 3
    tenant = _tenant()
    agent = control.create_instance(store, tenant, AgentType.SOA, AgentStatus.PAUSED)
    arguments = {"title": "t", "prompt": "do it"}
    for _ in range(ROUNDS):
        _close_all(store)
        for _ in range(already_live):
            registry.create_or_attach(store, "/ws", "thread", cap)
        contexts = [
            _context(store, tenant, agent.instance_id, f"op/{uuid.uuid4().hex}")
            for _ in range(THREADS)
        ]
        results = race(
            [
                partial(
                    task_proposals.propose_task, c, arguments, workspace_cwd="/ws", max_sessions=cap
                )
                for c in contexts
            ]
        )
        admitted = [r for r in results if isinstance(r, CodingTask)]
        refused = [r for r in results if isinstance(r, tool_context.BoundaryError)]
        assert len(admitted) + len(refused) == THREADS, results
        assert len(admitted) == cap - already_live
        assert _live(store) == cap
        assert all("maximum of 3 sessions" in str(err) for err in refused)
        # Each admitted task has its session row; no refused call left a task behind.
        with store.session() as db:
            for task in admitted:
                session = db.get(DaemonSession, task_session_id(task.task_id))
                assert session is not None and session.closed_at is None
            ops = {c.op_id for c in contexts}
            tasks = db.exec(select(CodingTask).where(col(CodingTask.op_id).in_(ops))).all()
        assert len(tasks) == len(admitted)


def test_a_retried_proposal_is_not_refused_by_its_own_session(store: Store) -> None:
    tenant = _tenant()
    agent = control.create_instance(store, tenant, AgentType.SOA, AgentStatus.PAUSED)
    context = _context(store, tenant, agent.instance_id, "op/retried")
    arguments = {"title": "t", "prompt": "do it"}
    first = task_proposals.propose_task(context, arguments, workspace_cwd="/ws", max_sessions=1)
    again = task_proposals.propose_task(context, arguments, workspace_cwd="/ws", max_sessions=1)
    assert again.task_id == first.task_id
    assert _live(store) == 1


def test_concurrent_single_creates_at_the_cap_all_attach_to_one_session(store: Store) -> None:
    """One slot under the cap and N `single` creates of one workspace at once: one
    creates, the others attach to it (an attach never counts against the cap)."""
    for _ in range(ROUNDS):
        workspace = f"/ws/{uuid.uuid4().hex[:8]}"
        with store.session() as db:
            live = len(
                db.exec(select(DaemonSession).where(col(DaemonSession.closed_at).is_(None))).all()
            )
        cap = live + 1
        results = race(
            [partial(registry.create_or_attach, store, workspace, "single", cap)] * THREADS
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert errors == []
        records = [r for r in results if not isinstance(r, BaseException)]
        assert len({record.session_id for record, _ in records}) == 1
        assert sorted(attached for _, attached in records) == [False] + [True] * (THREADS - 1)


def test_concurrent_session_creates_and_revives_never_exceed_the_cap(store: Store) -> None:
    cap = 3
    for _ in range(ROUNDS):
        _close_all(store)
        closed = [registry.create_or_attach(store, "/ws", "thread", 100)[0] for _ in range(2)]
        _close_all(store)
        calls: list[Callable[[], object]] = [
            partial(registry.create_or_attach, store, "/ws", "thread", cap)
            for _ in range(THREADS - 2)
        ]
        calls += [partial(registry.revive_session, store, s.session_id, cap) for s in closed]
        results = race(calls)
        made = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, registry.SessionLimitReached)]
        assert len(made) + len(refused) == THREADS, results
        assert len(made) == cap
        assert _live(store) == cap
