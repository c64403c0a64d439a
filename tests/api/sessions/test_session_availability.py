"""When no worker answers: 503 `worker_unavailable` with Retry-After, and the operation is
not applied later behind the caller's back (issue 7, defect 3). Prompts of any size
never travel through workflow history (defect 2)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import WorkflowQueryFailedError
from temporalio.testing import WorkflowEnvironment

from api.errors import ApiError
from api.sessions import temporal_calls
from api.temporal import query_workflow
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.store.journal_contracts import NewEvent, dedupe_key
from tests.conftest import ApiFactory
from tests.session_helpers import Daemon, write_prompt
from worker import build_worker

VOTE = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}


class Worker:
    """An in-process worker a test can stop and start again."""

    def __init__(self, env: WorkflowEnvironment, settings: Settings, store: Store) -> None:
        self.env, self.settings, self.store = env, settings, store
        self.stack: AsyncExitStack | None = None

    async def start(self) -> None:
        self.stack = AsyncExitStack()
        await self.stack.enter_async_context(
            build_worker(self.env.client, self.settings, self.store)
        )

    async def stop(self) -> None:
        assert self.stack is not None
        await self.stack.aclose()
        self.stack = None


Setup = Callable[..., Awaitable[tuple[Daemon, Worker]]]


@pytest.fixture
async def setup(
    api: ApiFactory,
    dev_env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Setup]:
    # No worker at all in these tests' outages: no task can be mid-flight, so the
    # grace for one (the workflow task timeout) is not needed to wait out.
    monkeypatch.setattr(temporal_calls, "ACCEPT_GRACE", 0.5)
    workers: list[Worker] = []
    stores: list[Store] = []

    async def make(**overrides: Any) -> tuple[Daemon, Worker]:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        values: dict[str, Any] = {
            "data_dir": tmp_path / ".data",
            "task_queue": task_queue,
            "workspace": workspace,
            "worker_wait_ms": 500,
            **overrides,
        }
        settings = Settings(**values)
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        stores.append(store)
        client = await api(**values)
        worker = Worker(dev_env, settings, store)
        workers.append(worker)
        daemon = Daemon(client=client, workspace=workspace.resolve(), journal=EventJournal(store))
        return daemon, worker

    yield make
    for worker in workers:
        if worker.stack is not None:
            await worker.stop()
    for store in stores:
        store.dispose()


def _is_worker_unavailable(response: Any) -> None:
    assert response.status_code == 503, response.text
    assert response.json()["code"] == "worker_unavailable"
    assert response.headers["Retry-After"]


async def _until_the_worker_answers(d: Daemon, sid: str, timeout: float = 30) -> None:
    """Until a read that asks the workflow answers 200. The restarted worker replays the
    session before it answers a query, which under load can outlast these tests' 500 ms
    `worker_wait_ms`: meanwhile the answer is the outage's 503, nothing else."""
    deadline = time.monotonic() + timeout
    while True:
        pending = await d.client.get(f"/session/{sid}/pending-prompts")
        if pending.status_code == 200:
            return
        _is_worker_unavailable(pending)
        assert time.monotonic() < deadline, "the restarted worker never answered"
        await asyncio.sleep(0.1)


async def _once_the_worker_takes_it(
    send: Callable[[], Awaitable[httpx.Response]],
) -> httpx.Response:
    """`send`'s first answer that is not the outage's 503, sending it again until then. A
    worker just started, or just replayed, may take longer than these tests' 500 ms
    `worker_wait_ms` (plus the 0.5 s grace) to take an update under load; a refused update
    is never applied, so sending it again is what a client told `Retry-After` does."""
    deadline = time.monotonic() + 30
    while True:
        response = await send()
        if response.status_code != 503:
            return response
        _is_worker_unavailable(response)
        assert time.monotonic() < deadline, "the started worker never took the update"
        await asyncio.sleep(0.1)


async def test_without_a_worker_routes_answer_503_and_apply_nothing(setup: Setup) -> None:
    d, worker = await setup()
    sid = (await d.create())["sessionId"]
    _is_worker_unavailable(await d.prompt(sid, "never run"))
    _is_worker_unavailable(
        await d.client.post(f"/session/{sid}/model", json={"modelId": "scripted"})
    )
    _is_worker_unavailable(await d.client.delete(f"/session/{sid}"))
    _is_worker_unavailable(await d.client.get(f"/session/{sid}/pending-prompts"))
    await worker.start()
    # Under load the new worker may take longer than this test's 500 ms
    # `worker_wait_ms` to answer: until it does, the answer is the outage's 503.
    await _until_the_worker_answers(d, sid)
    # The worker now sees the updates the API gave up on, and refuses every one.
    waited = await _once_the_worker_takes_it(
        lambda: d.client.post(
            f"/session/{sid}/prompt",
            headers={"Prefer": "wait"},
            json={"prompt": [{"type": "text", "text": "after the outage"}]},
        )
    )
    assert waited.json() == {"stopReason": "end_turn"}
    types = [e["type"] for e in d.events(sid)]
    assert "model_switched" not in types and "session_closed" not in types
    texts = [
        e["data"]["update"]["content"]["text"]
        for e in d.events(sid)
        if e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert texts == ["after the outage"]
    listed = await d.client.get(f"/workspace/{str(d.workspace).replace('/', '%2F')}/sessions")
    assert [s["sessionId"] for s in listed.json()["sessions"]] == [sid]


async def test_a_vote_no_worker_took_is_not_applied(setup: Setup) -> None:
    d, worker = await setup()
    await worker.start()
    sid = (await d.create())["sessionId"]
    text = write_prompt(d.workspace, "v.txt")
    submitted = await _once_the_worker_takes_it(lambda: d.prompt(sid, text))
    prompt_id = submitted.json()["promptId"]
    events = await d.wait_for(sid, "permission_request", prompt_id=prompt_id)
    rid = events[-1]["data"]["requestId"]
    await worker.stop()
    _is_worker_unavailable(await d.client.post(f"/permission/{rid}", json=VOTE))
    await worker.start()
    await _until_the_worker_answers(d, sid)
    assert "permission_resolved" not in [e["type"] for e in d.events(sid)]
    assert not (d.workspace / "v.txt").exists()
    again = await _once_the_worker_takes_it(lambda: d.client.post(f"/permission/{rid}", json=VOTE))
    assert again.status_code == 200, again.text
    events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    assert [e["type"] for e in events].count("permission_resolved") == 1
    assert (d.workspace / "v.txt").read_text() == "hi\n"


async def test_a_prompt_over_the_limit_is_413_before_anything_is_journaled(
    setup: Setup,
) -> None:
    d, worker = await setup(max_prompt_bytes=1000)
    await worker.start()
    sid = (await d.create())["sessionId"]
    before = d.events(sid)
    response = await d.prompt(sid, "é" * 501)  # 1002 bytes of UTF-8
    assert response.status_code == 413, response.text
    body = response.json()
    assert body["code"] == "prompt_too_large"
    assert body["limit"] == 1000 and body["size"] == 1002
    assert d.events(sid) == before


async def test_a_multi_megabyte_prompt_runs_and_later_prompts_are_whole(setup: Setup) -> None:
    """Over gRPC's 4 MB message limit: it would break the session if it went through history."""
    d, worker = await setup(max_prompt_bytes=8 * 1024 * 1024, worker_wait_ms=15_000)
    await worker.start()
    sid = (await d.create())["sessionId"]
    big = "a" * (5 * 1024 * 1024)
    first = await d.client.post(
        f"/session/{sid}/prompt",
        headers={"Prefer": "wait"},
        json={"prompt": [{"type": "text", "text": big}]},
        timeout=120,
    )
    assert first.json() == {"stopReason": "end_turn"}, first.text
    for text in ("second", "third"):
        waited = await d.client.post(
            f"/session/{sid}/prompt",
            headers={"Prefer": "wait"},
            json={"prompt": [{"type": "text", "text": text}]},
        )
        assert waited.json() == {"stopReason": "end_turn"}
    chunks = [
        e["data"]["update"]["content"]["text"]
        for e in d.events(sid)
        if e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert chunks == [big, "second", "third"]
    assert [e["type"] for e in d.events(sid)].count("turn_complete") == 3


def test_events_at_the_same_position_with_other_content_get_other_keys() -> None:
    """A failed workflow task's journaled events must not swallow the next task's."""
    a = NewEvent(type="session_update", data={"data": {"text": "a"}})
    b = NewEvent(type="session_update", data={"data": {"text": "b"}})
    key_a = dedupe_key("run", 3, [a])
    assert key_a != dedupe_key("run", 3, [b])
    assert key_a == dedupe_key("run", 3, [a.model_copy()])
    assert key_a.startswith("run/e3/")


async def test_a_failed_query_is_asked_again_within_the_wait() -> None:
    """A query the worker took but could not run (its workflow task failed: the
    deadlock guard firing on a loaded host) is asked again, not a 500."""
    asks: list[int] = []

    async def ask(_timeout: timedelta) -> str:
        asks.append(1)
        if len(asks) < 3:
            raise WorkflowQueryFailedError("[TMPRL1101] Potential deadlock detected")
        return "state"

    assert await query_workflow(ask, wait=10) == "state"
    assert len(asks) == 3


async def test_a_query_failing_until_the_wait_ends_is_worker_unavailable() -> None:
    async def ask(_timeout: timedelta) -> str:
        raise WorkflowQueryFailedError("[TMPRL1101] Potential deadlock detected")

    with pytest.raises(ApiError) as caught:
        await query_workflow(ask, wait=0.3)
    assert caught.value.status == 503
    assert caught.value.body["code"] == "worker_unavailable"
