"""Issue 18, items 2 to 5, mounted over HTTP against one real `agentrt up`: the workspace
fence and denial of service through the workspace.

The daemon runs as a user would start it in a project: `--workspace .` with the default
data dir `.data` inside it. The attacks:

- `GET /glob?pattern=../*` (Python's glob walked the parents, the whole disk);
- a symlink out of the workspace (of a file, of a directory: `escape_dir/**`);
- the data dir through the file routes (its store and device-flow credentials), and
  through the session agent's own `read_file` (it read them without a prompt);
- a FIFO (a read blocked a thread for good; six stalled every session);
- a catastrophic `.gitignore` line while `/health` is polled (`/list` matched it for
  minutes holding the GIL: `/health` stopped answering).

Every request carries a timeout: a regression fails the test, it never hangs it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_up_e2e import agentrt_up

SECRET = "gho_FENCE_SECRET_7d2e"
CATASTROPHIC = "*a*a*a*a*a*a*a*a*a*a*a*a*b"


@dataclass
class Daemon:
    client: httpx.Client
    workspace: Path
    outside: Path


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("fence")
    workdir = root / "project"
    (workdir / "src").mkdir(parents=True)
    (workdir / "src" / "a.py").write_text("value = 1\n")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (workdir / "escape").symlink_to(outside / "secret.txt")
    (workdir / "escape_dir").symlink_to(outside, target_is_directory=True)
    with agentrt_up(workdir, {"AGENTRT_WORKSPACE": "."}) as up:
        up.wait_healthy()
        credentials = workdir / ".data" / "credentials"
        credentials.mkdir(parents=True, exist_ok=True)
        (credentials / "github.json").write_text(json.dumps({"access_token": SECRET}))
        client = httpx.Client(base_url=up.api_url, timeout=30)
        yield Daemon(client, workdir.resolve(), outside)
        client.close()


def test_glob_with_dotdot_is_refused(daemon: Daemon) -> None:
    for pattern in ("../*", "../../**/*", "src/../../*"):
        answer = daemon.client.get("/glob", params={"pattern": pattern})
        assert answer.status_code == 400, answer.text
        assert answer.json()["errorKind"] == "path_outside_workspace"


def test_a_symlink_out_is_never_followed(daemon: Daemon) -> None:
    read = daemon.client.get("/file", params={"path": "escape"})
    assert read.status_code == 400 and read.json()["errorKind"] == "symlink_escape"
    through = daemon.client.get("/file", params={"path": "escape_dir/secret.txt"})
    assert through.json()["errorKind"] == "symlink_escape"
    for pattern in ("escape_dir/*", "escape_dir/**/*", "**/secret.txt"):
        found = daemon.client.get("/glob", params={"pattern": pattern})
        assert found.status_code == 200, found.text
        assert found.json()["matches"] == [], pattern
    assert SECRET not in read.text + through.text


def test_the_data_dir_is_never_served(daemon: Daemon) -> None:
    for route, params in (
        ("/file", {"path": ".data/credentials/github.json"}),
        ("/file/bytes", {"path": ".data/credentials/github.json"}),
        ("/file", {"path": ".data/agentrt.db"}),
        ("/list", {"path": ".data"}),
        ("/glob", {"pattern": "*", "cwd": ".data"}),
    ):
        answer = daemon.client.get(route, params=params)
        assert answer.status_code == 403, (route, answer.text)
        assert answer.json()["errorKind"] == "permission_denied"
        assert SECRET not in answer.text
    globbed = daemon.client.get("/glob", params={"pattern": "**/*.json"})
    assert globbed.status_code == 200 and globbed.json()["matches"] == []


def test_the_session_agent_cannot_read_the_data_dir(daemon: Daemon) -> None:
    """`read_file` is a read-only tool (no prompt, even in `plan` mode): the fence alone
    keeps the credentials out of the transcript."""
    created = daemon.client.post("/session", json={})
    assert created.status_code == 200, created.text
    sid = created.json()["sessionId"]
    path = str(daemon.workspace / ".data" / "credentials" / "github.json")
    failed = _read_file_in_a_session(daemon.client, sid, path)
    assert failed["status"] == "failed", failed
    assert "data directory" in json.dumps(failed)
    assert SECRET not in json.dumps(_session_updates(daemon.client, sid))


def _read_file_in_a_session(client: httpx.Client, sid: str, path: str) -> dict[str, Any]:
    """The `tool_call_update` of a `read_file` the scripted agent calls (the prompt waits
    for its turn, within a bound)."""
    text = "/call read_file " + json.dumps({"absolute_path": path})
    done = client.post(
        f"/session/{sid}/prompt",
        json={"prompt": [{"type": "text", "text": text}]},
        headers={"Prefer": "wait"},
        timeout=90,
    )
    assert done.status_code == 200, done.text
    updates = _session_updates(client, sid)
    closed = [u for u in updates if u.get("sessionUpdate") == "tool_call_update"]
    assert closed, updates
    return closed[-1]


def _session_updates(client: httpx.Client, sid: str) -> list[dict[str, Any]]:
    updates: list[dict[str, Any]] = []
    with client.stream("GET", f"/session/{sid}/events", headers={"Last-Event-ID": "0"}) as stream:
        for line in stream.iter_lines():
            if line.startswith("data: "):
                frame = json.loads(line[6:])
                if frame["type"] == "replay_complete":
                    break
                if frame["type"] == "session_update":
                    updates.append(frame["data"]["update"])
    return updates


def test_a_fifo_is_refused_at_once_and_six_do_not_stall_the_daemon(daemon: Daemon) -> None:
    fifos = [daemon.workspace / f"pipe{i}" for i in range(6)]
    for fifo in fifos:
        os.mkfifo(fifo)
    answers: list[httpx.Response] = []
    try:
        # The session agent's read_file blocked on it for good (a worker thread lost).
        sid = daemon.client.post("/session", json={}).json()["sessionId"]
        failed = _read_file_in_a_session(daemon.client, sid, "pipe0")
        assert failed["status"] == "failed" and "a FIFO" in json.dumps(failed), failed
        threads = [
            threading.Thread(
                target=lambda f=f: answers.append(
                    daemon.client.get("/file", params={"path": f.name}, timeout=20)
                ),
                daemon=True,
            )
            for f in fifos
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(40)
        assert len(answers) == 6, "a read of a FIFO blocked"
        for answer in answers:
            assert answer.status_code == 400, answer.text
            assert "a FIFO" in answer.json()["error"]
        assert daemon.client.get("/health", timeout=10).status_code == 200
        assert daemon.client.get("/file", params={"path": "src/a.py"}).status_code == 200
    finally:
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
            fifo.unlink()


def test_a_catastrophic_gitignore_does_not_stall_health(daemon: Daemon) -> None:
    (daemon.workspace / ".gitignore").write_text(f"{CATASTROPHIC}\n")
    for i in range(20):
        (daemon.workspace / ("a" * (30 + i))).write_text("x")
    (daemon.workspace / ("a" * 40 + "b")).write_text("x")
    listings: list[httpx.Response] = []
    stop = threading.Event()

    def list_again() -> None:
        deadline = time.monotonic() + 10
        while not stop.is_set() and time.monotonic() < deadline:
            listings.append(daemon.client.get("/list", params={"path": "."}, timeout=60))

    lister = threading.Thread(target=list_again, daemon=True)
    lister.start()
    try:
        healths: list[httpx.Response] = []
        while lister.is_alive() and len(healths) < 20:
            healths.append(daemon.client.get("/health", timeout=10))
            time.sleep(0.1)
    finally:
        stop.set()
        lister.join(90)
    assert not lister.is_alive(), "a /list never answered"
    assert healths and all(h.status_code == 200 for h in healths)
    assert listings and all(r.status_code == 200 for r in listings)
    flags = {e["name"]: e["ignored"] for e in listings[-1].json()["entries"]}
    assert flags["a" * 40] is False and flags["a" * 40 + "b"] is True
    read = daemon.client.get("/file", params={"path": "a" * 40 + "b"})
    assert read.status_code == 200 and read.json()["matchedIgnore"] == "file"
