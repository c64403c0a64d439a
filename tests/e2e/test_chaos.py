"""Chaos: `kill -9` and SIGSTOP/SIGCONT of the worker, the API and the Temporal server of a
real `agentrt up`, at randomized points, while a session prompt waits at a permission vote
with prompts queued behind it and an agent-tools turn waits at its authorization.

Whatever the schedule, afterwards: every prompt and the turn completed; a replay from
`Last-Event-ID: 0` is contiguous with no duplicates; the file was edited exactly once;
the vote and the research decision were each applied once.

The seed is printed (`AGENTRT_CHAOS_SEED` replays a schedule).
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from runtime.sessions.streams import envelope
from runtime.store import EventJournal, Store
from runtime.streams import session_stream
from tests.agent_tools_helpers import DEMO_PROMPT
from tests.e2e.test_up_e2e import agentrt_up

ROUNDS = 6
DEADLINE = 240.0


class Client:
    """A client that keeps trying through the chaos: a 503, a refused connection or a
    timeout is retried; `done` decides which answers end the retries."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=8)

    def call(
        self,
        method: str,
        path: str,
        done: Callable[[httpx.Response, bool], bool] = lambda r, _: r.status_code < 300,
        **kwargs: Any,
    ) -> httpx.Response:
        """`done(response, lost)`: `lost` says an earlier attempt's answer was lost, so
        the operation may already have been applied."""
        deadline = time.monotonic() + DEADLINE
        lost = False
        last: object = None
        while time.monotonic() < deadline:
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as err:
                lost, last = True, err
                time.sleep(0.5)
                continue
            if response.status_code in (502, 503):
                last = response.text
                time.sleep(0.5)
                continue
            assert done(response, lost), (method, path, response.status_code, response.text)
            return response
        raise AssertionError(f"{method} {path} never succeeded: {last}")


def _pid(data_dir: Path, name: str) -> int | None:
    try:
        return int((data_dir / f"{name}.pid").read_text())
    except (FileNotFoundError, ValueError):
        return None


def _send(pid: int | None, signum: int) -> None:
    if pid is None:
        return
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _session_events(store: Store, sid: str) -> list[dict[str, Any]]:
    page = EventJournal(store).read(session_stream(sid), 0, 100_000)
    return [envelope(e) for e in page.entries]


def _has(types_of: Callable[[str], list[str]], prompt_id: str, event_type: str) -> bool:
    return event_type in types_of(prompt_id)


def _wait(predicate: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} never happened")


# Long by design (about 35 s): a real `agentrt up` whose worker, API and Temporal server are
# killed and stalled at random points, then waited on until every prompt and the turn end.
def test_chaos(tmp_path: Path) -> None:
    seed = int(os.environ.get("AGENTRT_CHAOS_SEED", random.randrange(1 << 30)))
    print(f"chaos seed {seed}")
    rng = random.Random(seed)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "f").write_text("MARK\n")
    data_dir = tmp_path / ".data"
    env = {"AGENTRT_WORKSPACE": str(workspace), "AGENTRT_WORKER_WAIT_MS": "5000"}
    with agentrt_up(tmp_path, env) as up:
        up.wait_healthy()
        store = Store(f"sqlite:///{data_dir / 'agentrt.db'}")
        c = Client(up.api_url)

        # The scene, set before the chaos (a prompt whose answer is lost cannot be
        # retried safely: the protocol has no idempotency key for prompts).
        sid = c.call("POST", "/session", json={}).json()["sessionId"]
        args = {"file_path": str(workspace / "f"), "old_string": "MARK", "new_string": "MARK+"}
        prompts = [f"/call edit {json.dumps(args)}\n/say edited", "queued one", "queued two"]
        prompt_ids = [
            c.call(
                "POST",
                f"/session/{sid}/prompt",
                json={"prompt": [{"type": "text", "text": text}]},
            ).json()["promptId"]
            for text in prompts
        ]

        def types_of(prompt_id: str) -> list[str]:
            return [
                e["type"] for e in _session_events(store, sid) if e.get("promptId") == prompt_id
            ]

        _wait(lambda: "permission_request" in types_of(prompt_ids[0]), "permission_request")
        request_id = next(
            e["data"]["requestId"]
            for e in _session_events(store, sid)
            if e["type"] == "permission_request"
        )
        csrf = c.call("GET", "/api/v1/agent-tools/session").json()["csrfToken"]
        mutation = {"Origin": up.api_url, "X-CSRF-Token": csrf}
        turn_id = "chaos-turn"
        c.call(
            "POST",
            "/api/v1/agent-tools/turns",
            json={"prompt": DEMO_PROMPT, "turn_id": turn_id},
            headers=mutation,
        )

        def turn_events() -> list[dict[str, Any]]:
            response = c.call("GET", "/api/v1/agent-tools/events?cursor=0&limit=500")
            events: list[dict[str, Any]] = response.json()["events"]
            return [e for e in events if e["turn_id"] == turn_id]

        _wait(
            lambda: any(e["type"] == "agent.authorization.required" for e in turn_events()),
            "agent.authorization.required",
        )
        research_id = next(e for e in turn_events() if e["type"] == "agent.authorization.required")[
            "payload"
        ]["research_id"]

        # The chaos: each round hits one process; the vote and the decision land in between.
        def vote() -> None:
            c.call(
                "POST",
                f"/permission/{request_id}",
                json={"outcome": {"outcome": "selected", "optionId": "proceed_once"}},
                # 404 after a lost answer: an earlier attempt was applied.
                done=lambda r, lost: r.status_code == 200 or (lost and r.status_code == 404),
            )

        def decide_and_resume() -> None:
            c.call(
                "POST",
                f"/api/v1/research/{research_id}/decision",
                json={"decision": "approve", "decided_by": "chaos@example", "note": "ok"},
                headers=mutation,
                done=lambda r, lost: r.status_code == 200 or (lost and r.status_code == 409),
            )
            c.call(
                "POST",
                f"/api/v1/agent-tools/turns/{turn_id}/resume",
                json={},
                headers=mutation,
                # 409 turn_not_waiting: it resumed already (an earlier attempt, or the signal).
                done=lambda r, _: r.status_code in (200, 409),
            )

        operations = {1: vote, 3: decide_and_resume}
        for round_ in range(ROUNDS):
            target = rng.choice(["worker", "api", "temporal"])
            pid = _pid(data_dir, target)
            if rng.random() < 0.5:
                print(f"round {round_}: kill -9 {target} ({pid})")
                _send(pid, signal.SIGKILL)
            else:
                pause = rng.uniform(1.0, 8.0)
                print(f"round {round_}: SIGSTOP {target} ({pid}) for {pause:.1f}s")
                _send(pid, signal.SIGSTOP)
                time.sleep(pause)
                _send(pid, signal.SIGCONT)
            time.sleep(rng.uniform(0.0, 1.5))
            if round_ in operations:
                operations[round_]()

        # Everything completes.
        for prompt_id in prompt_ids:
            _wait(partial(_has, types_of, prompt_id, "turn_complete"), f"turn_complete {prompt_id}")
        _wait(
            lambda: any(e["type"] == "agent.turn.completed" for e in turn_events()),
            "agent.turn.completed",
        )

        # Replay from the start: contiguous, no duplicates.
        frames: list[dict[str, Any]] = []
        with c.http.stream(
            "GET", f"/session/{sid}/events", headers={"Last-Event-ID": "0"}
        ) as stream:
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    frames.append(json.loads(line[6:]))
                    if frames[-1]["type"] == "replay_complete":
                        break
        ids = [f["id"] for f in frames if "id" in f]
        assert ids == list(range(1, len(ids) + 1))
        for prompt_id in prompt_ids:
            mine = [f["type"] for f in frames if f.get("promptId") == prompt_id]
            assert mine.count("turn_complete") == 1, mine
            chunks = [
                f
                for f in frames
                if f.get("promptId") == prompt_id
                and f["type"] == "session_update"
                and f["data"]["update"]["sessionUpdate"] == "user_message_chunk"
            ]
            assert len(chunks) == 1
        updates = [
            f
            for f in frames
            if f["type"] == "session_update"
            and f["data"]["update"]["sessionUpdate"] == "tool_call_update"
        ]
        assert len(updates) == 1 and updates[0]["data"]["update"]["status"] == "completed"
        assert [f["type"] for f in frames].count("permission_resolved") == 1
        assert (workspace / "f").read_text() == "MARK+\n"

        seqs = [e["sequence"] for e in turn_events()]
        assert seqs == sorted(set(seqs))
        turn = [e["type"] for e in turn_events()]
        assert turn.count("agent.turn.completed") == 1
        assert turn.count("agent.authorization.required") == 1
        research = c.call("GET", f"/api/v1/research/{research_id}")
        assert research.json()["state"] in ("admitted", "running", "completed"), research.text
        store.dispose()
