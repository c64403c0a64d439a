"""The workspace fence at the file routes, and denial of service through the workspace
(issue 18, items 2 to 5), through the `api` fixture:

- `GET /glob?pattern=../*` is refused before any search child starts;
- the data dir inside the workspace (the fixture's default: `.data` in the workspace)
  is 403 on every route and never globbed;
- a symlink swapped in between the check and the open is refused;
- a FIFO answers a file error at once on every route (no thread is lost);
- a catastrophic `.gitignore` line does not stall `/health` while a `/list` matches it;
- `GET /glob` runs at most `search_children` children: the next is 429 with Retry-After.

Nothing waits without a bound: a FIFO left blocking is released by opening its other end.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.workspace import search
from runtime.workspace.fence import Fence
from runtime.workspace.ignore import Ignore
from tests.conftest import ApiFactory

TOKEN = "fence-token"
BOUND = 30.0
CATASTROPHIC = "*a*a*a*a*a*a*a*a*a*a*a*a*b"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The fixture's workspace is `tmp_path`, its data dir `tmp_path/.data` (inside)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.txt").write_text("inner\n")
    (tmp_path / "README.txt").write_text("hello\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (outside / "inner.txt").write_text("outside inner\n")
    (tmp_path / "escape_dir").symlink_to(outside, target_is_directory=True)
    credentials = tmp_path / ".data" / "credentials"
    credentials.mkdir(parents=True, exist_ok=True)
    (credentials / "github.json").write_text('{"access_token": "gho_secret"}')
    return tmp_path


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """The requests that reached a search child (the real one still runs)."""
    calls: list[dict[str, Any]] = []
    real = search._run_child

    async def recording(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        calls.append(request)
        return await real(request, timeout)

    monkeypatch.setattr(search, "_run_child", recording)
    yield calls


def release(fifo: Path) -> None:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass  # no reader blocked on it: nothing to release


async def test_glob_with_dotdot_is_refused_before_any_walk(
    api: ApiFactory, ws: Path, spawned: list[dict[str, Any]]
) -> None:
    client = await api()
    for pattern in ("../*", "../**/*", "sub/../../*", ".."):
        answer = await client.get("/glob", params={"pattern": pattern})
        assert answer.status_code == 400, answer.text
        assert answer.json()["errorKind"] == "path_outside_workspace"
    assert spawned == []
    fine = await client.get("/glob", params={"pattern": "**/*.txt"})
    assert fine.status_code == 200 and sorted(fine.json()["matches"]) == [
        "README.txt",
        "sub/inner.txt",
    ]
    assert len(spawned) == 1


async def test_glob_never_walks_through_a_symlink_out(api: ApiFactory, ws: Path) -> None:
    client = await api()
    for pattern in ("escape_dir/*", "escape_dir/**/*", "*/*.txt", "**/secret.txt"):
        answer = await client.get("/glob", params={"pattern": pattern})
        assert answer.status_code == 200, answer.text
        assert "secret.txt" not in str(answer.json()["matches"]), pattern
        assert all(not m.startswith("escape_dir") for m in answer.json()["matches"])
    refused = await client.get("/glob", params={"pattern": "*", "cwd": "escape_dir"})
    assert refused.json()["errorKind"] == "symlink_escape"


async def test_the_data_dir_in_the_workspace_is_403_and_never_globbed(
    api: ApiFactory, ws: Path
) -> None:
    client = await api(token=TOKEN)
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    for route, params in (
        ("/file", {"path": ".data/credentials/github.json"}),
        ("/file/bytes", {"path": ".data/credentials/github.json"}),
        ("/stat", {"path": ".data/agentrt.db"}),
        ("/list", {"path": ".data"}),
        ("/glob", {"pattern": "*", "cwd": ".data/credentials"}),
    ):
        answer = await client.get(route, params=params)
        assert answer.status_code == 403, (route, answer.text)
        assert answer.json()["errorKind"] == "permission_denied"
        assert "gho_secret" not in answer.text
    found = await client.get("/glob", params={"pattern": "**/*.json"})
    assert found.status_code == 200 and found.json()["matches"] == []
    written = await client.post(
        "/file/write",
        json={"path": ".data/credentials/evil.json", "content": "x", "mode": "create"},
    )
    assert written.status_code == 403
    assert not (ws / ".data" / "credentials" / "evil.json").exists()


async def test_a_component_swapped_for_a_symlink_after_the_check_is_refused(
    api: ApiFactory, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await api(token=TOKEN)
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    outside = ws.parent / f"{ws.name}-outside"
    original = Fence.resolve

    def racing(self: Fence, raw: str) -> Path:
        checked = original(self, raw)
        if (ws / "sub").is_dir() and not (ws / "sub").is_symlink():
            (ws / "sub").rename(ws / "sub.moved")
            (ws / "sub").symlink_to(outside, target_is_directory=True)
        return checked

    monkeypatch.setattr(Fence, "resolve", racing)
    read = await client.get("/file", params={"path": "sub/inner.txt"})
    assert read.status_code == 400 and read.json()["errorKind"] == "symlink_escape"
    assert "outside inner" not in read.text
    (ws / "sub").unlink()
    (ws / "sub.moved").rename(ws / "sub")
    written = await client.post(
        "/file/write", json={"path": "sub/inner.txt", "content": "pwned", "mode": "create"}
    )
    assert written.json()["errorKind"] in ("symlink_escape", "file_already_exists")
    assert (outside / "inner.txt").read_text() == "outside inner\n"


async def test_a_fifo_is_a_file_error_at_once_on_every_route(api: ApiFactory, ws: Path) -> None:
    client = await api(token=TOKEN)
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    edit = {"path": "pipe", "oldText": "a", "newText": "b", "expectedHash": "sha256:" + "0" * 64}
    replace = {
        "path": "pipe",
        "content": "x",
        "mode": "replace",
        "expectedHash": edit["expectedHash"],
    }
    try:
        for answer in await asyncio.wait_for(
            asyncio.gather(
                client.get("/file", params={"path": "pipe"}),
                client.get("/file/bytes", params={"path": "pipe"}),
                client.post("/file/edit", json=edit),
                client.post("/file/write", json=replace),
                *(client.get("/file", params={"path": "pipe"}) for _ in range(6)),
            ),
            BOUND,
        ):
            assert answer.status_code == 400, answer.text
            assert answer.json()["errorKind"] == "parse_error"
            assert "a FIFO" in answer.json()["error"]
        stat = await client.get("/stat", params={"path": "pipe"})
        assert stat.json()["type"] == "other"
        listed = await client.get("/list", params={"path": "."})
        assert {e["name"]: e["kind"] for e in listed.json()["entries"]}["pipe"] == "other"
        grep_free = await client.get("/glob", params={"pattern": "*"})
        assert "pipe" not in grep_free.json()["matches"]
    finally:
        for _ in range(12):
            release(fifo)


async def test_a_catastrophic_gitignore_does_not_stall_health(
    api: ApiFactory, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's line against 40 `a`s took minutes holding the GIL: /health stopped.
    Here the /list is kept in progress (a hook repeats the real matching until /health
    has answered), so /health is asked while it runs."""
    (ws / ".gitignore").write_text(f"{CATASTROPHIC}\n")
    (ws / ("a" * 40)).write_text("x")
    (ws / ("a" * 40 + "b")).write_text("x")
    entered = threading.Event()
    answered = threading.Event()
    real = Ignore.ignored

    def busy(self: Ignore, path: str) -> bool:
        if not entered.is_set():
            entered.set()
            deadline = time.monotonic() + BOUND
            while not answered.is_set() and time.monotonic() < deadline:
                real(self, "a" * 40)  # the catastrophic case, over and over
        return real(self, path)

    monkeypatch.setattr(Ignore, "ignored", busy)
    client = await api()
    listing = asyncio.create_task(client.get("/list", params={"path": "."}))
    for _ in range(int(BOUND * 10)):
        if entered.is_set():
            break
        await asyncio.sleep(0.1)
    assert entered.is_set(), "the /list never reached the .gitignore"
    try:
        health = await asyncio.wait_for(client.get("/health"), BOUND)
    finally:
        answered.set()
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert not listing.done() or listing.result().status_code == 200
    listed = await asyncio.wait_for(listing, BOUND)
    flags = {e["name"]: e["ignored"] for e in listed.json()["entries"]}
    assert flags["a" * 40] is False and flags["a" * 40 + "b"] is True


async def test_glob_over_the_children_cap_is_429_with_retry_after(
    api: ApiFactory, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four slow globs hold the four slots (a hook holds each child until released): the
    fifth is refused at once with the rate limiter's 429, and the slots come back."""
    inside = 0
    go = asyncio.Event()

    async def held(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        nonlocal inside
        inside += 1
        await asyncio.wait_for(go.wait(), BOUND)
        return {"paths": [], "more": False}

    monkeypatch.setattr(search, "_run_child", held)
    client = await api()
    assert search.SLOTS.running == 0
    slow = [asyncio.create_task(client.get("/glob", params={"pattern": "*.txt"})) for _ in range(4)]
    for _ in range(int(BOUND * 10)):
        if inside == 4:
            break
        await asyncio.sleep(0.1)
    assert inside == 4
    try:
        over = await client.get("/glob", params={"pattern": "*.txt"})
    finally:
        go.set()
    assert over.status_code == 429, over.text
    assert over.headers["Retry-After"] == "1"
    assert over.headers["cache-control"] == "no-store"
    body = over.json()
    assert body["code"] == "rate_limit_exceeded" and body["limit"] == 4
    assert body["retryAfterMs"] == 1000 and body["tier"] == "search"
    done = await asyncio.wait_for(asyncio.gather(*slow), BOUND)
    assert [r.status_code for r in done] == [200] * 4
    assert inside == 4 and search.SLOTS.running == 0


async def test_the_children_cap_is_a_setting(
    api: ApiFactory, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    go = asyncio.Event()

    async def held(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        await asyncio.wait_for(go.wait(), BOUND)
        return {"paths": [], "more": False}

    monkeypatch.setattr(search, "_run_child", held)
    client = await api(search_children=1)
    first = asyncio.create_task(client.get("/glob", params={"pattern": "*"}))
    for _ in range(int(BOUND * 10)):
        if search.SLOTS.running == 1:
            break
        await asyncio.sleep(0.1)
    try:
        over = await client.get("/glob", params={"pattern": "*"})
    finally:
        go.set()
    assert over.status_code == 429 and over.json()["limit"] == 1
    assert (await asyncio.wait_for(first, BOUND)).status_code == 200
