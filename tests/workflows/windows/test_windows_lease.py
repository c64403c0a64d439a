"""WindowsLeaseWorkflow on the time-skipping server, against the loopback pool
(tests/fakes/windows_pool.py) through the real pool activities: idle expiry, renewal
before expiry, release on the holder's settlement and on windows_release (idempotent),
eviction (the next verb leases anew), validation before any lease."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateStage
from temporalio.testing import WorkflowEnvironment

from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from runtime.windows import lease_client
from runtime.windows.errors import WindowsErrorCode
from runtime.windows.lease_contracts import LeaseCall, LeaseCallResult, LeaseView
from runtime.windows.verbs import WindowsVerb
from tests.fakes.windows_pool import FakeWindowsPool
from tests.windows_helpers import POOL_TOKEN, call, lease_handle
from tests.workflows.standing_agent_support import agent_env  # noqa: F401  (fixture)
from worker import build_worker

DAY_MS = 86_400_000


@dataclass
class Lane:
    env: WorkflowEnvironment
    settings: Settings
    pool: FakeWindowsPool

    async def call(self, holder: str, verb: str, args: dict[str, object] | None = None) -> object:
        return await call(self.env.client, self.settings, holder, verb, args, wait_ms=DAY_MS)

    def posts(self, suffix: str) -> list[str]:
        return [path for method, path, _ in self.pool.requests if path.endswith(suffix)]


@pytest.fixture
def pool() -> Iterator[FakeWindowsPool]:
    with FakeWindowsPool(token=POOL_TOKEN) as fake:
        yield fake


@pytest.fixture
async def lane(
    agent_env: WorkflowEnvironment,  # noqa: F811
    task_queue: str,
    tmp_path: Path,
    pool: FakeWindowsPool,
) -> AsyncIterator[Lane]:
    # A time-skipping server of its own: the shared one's clock has run days ahead after
    # the agents' tests, and the calls' accept deadlines are wall-clock times.
    time_env = agent_env
    store = Store(f"sqlite:///{tmp_path / 'agentrt.db'}")
    upgrade_to_head(store.engine)
    settings = Settings(
        data_dir=tmp_path / ".data",
        task_queue=task_queue,
        workspace=tmp_path,
        windows_pool_url=pool.base_url,
        windows_pool_token=POOL_TOKEN,
        windows_lease_ms=300_000,
        windows_lease_idle_ms=1_800_000,
    )
    async with build_worker(time_env.client, settings, store):
        yield Lane(time_env, settings, pool)
    store.dispose()


def _holder() -> str:
    return f"h-{uuid.uuid4().hex[:8]}"


async def test_an_idle_lease_is_released_after_the_idle_time(lane: Lane) -> None:
    holder = _holder()
    await lane.call(holder, "windows_windows")
    (sid,) = list(lane.pool.sessions)
    handle = lease_handle(lane.env.client, holder)
    await lane.env.sleep(timedelta(minutes=31))
    view = LeaseView.model_validate(await handle.result())
    assert view.state == "idle_expired"
    assert not lane.pool.sessions
    assert ("DELETE", f"/v1/sessions/{sid}") in [(m, p) for m, p, _ in lane.pool.requests]


async def test_a_held_lease_is_renewed_before_it_expires(lane: Lane) -> None:
    holder = _holder()
    await lane.call(holder, "windows_windows")
    (sid,) = list(lane.pool.sessions)
    # Each verb resets the idle clock; the pool lease (5 min) is renewed meanwhile.
    for _ in range(3):
        await lane.env.sleep(timedelta(minutes=4))
        await lane.call(holder, "windows_windows")
    assert len(lane.posts("/renew")) >= 2
    assert list(lane.pool.sessions) == [sid]  # the same machine all along
    view = await lease_handle(lane.env.client, holder).query("lease", result_type=LeaseView)
    assert view.state == "held" and view.sessionId == sid


async def test_settlement_releases_the_lease(lane: Lane) -> None:
    holder = _holder()
    launched = await lane.call(holder, "windows_launch", {"program": "notepad.exe"})
    assert isinstance(launched, dict) and launched.get("pid")
    (sid,) = list(lane.pool.sessions)
    assert await lease_client.settle(lane.env.client, "acme", holder, "session_closed")
    view = LeaseView.model_validate(await lease_handle(lane.env.client, holder).result())
    assert view.state == "settled"
    assert not lane.pool.sessions
    assert lane.pool.closed[sid]  # the guest closed what the session launched
    # Nothing held: a settlement of a holder without a lease changes nothing.
    assert not await lease_client.settle(lane.env.client, "acme", holder, "again")


async def test_release_is_idempotent(lane: Lane) -> None:
    holder = _holder()
    assert await lane.call(holder, "windows_release") == {
        "released": False,
        "outcome": "not_held",
    }
    assert not lane.pool.requests  # nothing was called
    await lane.call(holder, "windows_windows")
    released = await lane.call(holder, "windows_release")
    assert released == {"released": True, "outcome": "released"}
    assert not lane.pool.sessions
    assert await lane.call(holder, "windows_release") == {
        "released": False,
        "outcome": "not_held",
    }


async def test_an_evicted_session_is_abandoned_and_the_next_verb_leases_anew(lane: Lane) -> None:
    holder = _holder()
    await lane.call(holder, "windows_windows")
    (first,) = list(lane.pool.sessions)
    lane.pool.evict(first)
    with pytest.raises(lease_client.LeaseCallFailed) as failed:
        await lane.call(holder, "windows_windows")
    assert failed.value.error.code == WindowsErrorCode.NOT_FOUND
    assert failed.value.error.data.sessionEvicted is True
    await lane.call(holder, "windows_windows")
    (second,) = list(lane.pool.sessions)
    assert second != first


async def test_an_invalid_call_leases_nothing(lane: Lane) -> None:
    holder = _holder()
    with pytest.raises(lease_client.LeaseCallFailed) as failed:
        # Validated by the update's validator (the route validates before it, too).
        await lease_client.call_verb(
            lane.env.client,
            task_queue=lane.settings.task_queue,
            tenant="acme",
            holder=holder,
            verb=WindowsVerb.TYPE,
            args={"text": "a", "secretRef": "app-password"},
            lease_ms=300_000,
            idle_ms=1_800_000,
            wait_ms=DAY_MS,
            result_wait_s=60,
        )
    assert failed.value.error.code == WindowsErrorCode.VALIDATION_ERROR
    assert not lane.pool.requests


async def test_a_verb_after_the_holder_settled_is_refused_and_leases_nothing(lane: Lane) -> None:
    """The holder settles while a verb runs: the verb after it is a VALIDATION_ERROR of
    agentrt's (reason holder_settled, no httpStatus, never the pool's CONFLICT), the
    running verb ends, then the lease is released; no second machine is leased."""
    holder = _holder()
    await lane.call(holder, "windows_windows")
    (sid,) = list(lane.pool.sessions)
    # A wait the guest holds for a few seconds: the lease is busy meanwhile.
    waiting = asyncio.create_task(
        lane.call(
            holder, "windows_wait_for", {"title": "never", "state": "exists", "timeoutMs": 3000}
        )
    )
    for _ in range(500):
        if lane.posts("/wait_for"):
            break
        await asyncio.sleep(0.02)
    assert await lease_client.settle(lane.env.client, "acme", holder, "turn_finished")
    with pytest.raises(lease_client.LeaseCallFailed) as failed:
        await lane.call(holder, "windows_windows")
    error = failed.value.error
    assert error.code == WindowsErrorCode.VALIDATION_ERROR
    assert error.data.reason == "holder_settled" and error.data.httpStatus is None
    assert "turn_finished" in error.message
    with pytest.raises(lease_client.LeaseCallFailed) as timed_out:
        await waiting
    assert timed_out.value.error.code == WindowsErrorCode.WAIT_TIMEOUT
    view = LeaseView.model_validate(await lease_handle(lane.env.client, holder).result())
    assert view.state == "settled"
    assert not lane.pool.sessions and sid in lane.pool.closed
    assert len(lane.posts("/v1/sessions")) == 1


async def test_a_release_sent_while_the_settlement_releases_answers_not_held(
    lane: Lane,
) -> None:
    """The holder settled and the lease is closing its session when the holder's own
    `windows_release` arrives: it waits for that close and finds nothing held, instead of
    closing the session a second time (which the pool no longer knows: `evicted`)."""
    holder = _holder()
    await lane.call(holder, "windows_windows")
    (sid,) = list(lane.pool.sessions)
    closing = lane.pool.withhold("DELETE", f"/v1/sessions/{sid}$")
    assert await lease_client.settle(lane.env.client, "acme", holder, "session_closed")
    assert await asyncio.to_thread(closing.reached.wait, 60)  # the pool has closed it
    handle = lease_handle(lane.env.client, holder)
    release = await handle.start_update(
        "call",
        LeaseCall(verb="windows_release"),
        wait_for_stage=WorkflowUpdateStage.ACCEPTED,
        result_type=LeaseCallResult,
    )
    closing.release.set()
    assert (await release.result()).result == {"released": False, "outcome": "not_held"}
    view = LeaseView.model_validate(await handle.result())
    assert view.state == "settled"
    assert [(m, p) for m, p, _ in lane.pool.requests].count(("DELETE", f"/v1/sessions/{sid}")) == 1
