"""GET /session/{id}/events over real HTTP: uvicorn on a free port, httpx streaming.

httpx's ASGI transport buffers whole responses, so these tests run the app with
uvicorn in the test's event loop and read the stream line by line. Expected
bytes follow the reference recordings (A_tokenless 043-052, 085, 087, 090).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from api.app import create_app
from api.sse import SseConfig, subscriber_registry
from runtime.sessions.registry import close_session, create_or_attach
from runtime.sessions.streams import session_event
from runtime.settings import Settings
from runtime.store import EventJournal, JournalPage, Store
from runtime.streams import session_stream
from tests.conftest import free_port, loopback_socket

SSE_HEADERS = {"Accept": "text/event-stream"}


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the test runner keeps its own."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class LiveApi:
    app: FastAPI
    settings: Settings
    base_url: str

    @property
    def store(self) -> Store:
        store: Store = self.app.state.store
        return store

    @property
    def journal(self) -> EventJournal:
        journal: EventJournal = self.app.state.journal
        return journal

    def configure(self, **values: Any) -> None:
        self.app.state.sse_config = SseConfig(**values)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url, timeout=10)

    async def new_session(self) -> str:
        record, _ = await asyncio.to_thread(
            create_or_attach, self.store, self.settings.workspace_cwd, "thread", 20
        )
        return record.session_id

    async def append(self, session_id: str, count: int, **kwargs: Any) -> list[int]:
        events = [session_event("session_update", {"n": i}) for i in range(count)]
        entries = await self.journal.aappend_many(session_stream(session_id), events, **kwargs)
        return [entry.seq for entry in entries]

    def subscribers(self, session_id: str) -> int:
        return subscriber_registry(self.app).count(session_id)


@asynccontextmanager
async def serve(tmp_path: Path) -> AsyncIterator[LiveApi]:
    """The app under uvicorn on a fresh port, over the SQLite file under `tmp_path`."""
    sock = loopback_socket()  # bound now: no other process takes the port meanwhile
    port = int(sock.getsockname()[1])
    settings = Settings(
        workspace=tmp_path,
        data_dir=tmp_path / ".data",
        port=port,
        # Nothing listens there: the API starts and serves without Temporal.
        temporal_address=f"127.0.0.1:{free_port()}",
    )
    app = create_app(settings)
    server = _Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            lifespan="on",
            log_level="warning",
            timeout_graceful_shutdown=2,
        )
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped before starting")
            await asyncio.sleep(0.01)
        yield LiveApi(app, settings, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        await task
        sock.close()


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[LiveApi]:
    async with serve(tmp_path) as api:
        yield api


@dataclass
class Frame:
    lines: list[str] = field(default_factory=list)

    def field(self, name: str) -> str | None:
        prefix = f"{name}: "
        for line in self.lines:
            if line.startswith(prefix):
                return line[len(prefix) :]
        return None

    @property
    def id(self) -> int | None:
        value = self.field("id")
        return None if value is None else int(value)

    @property
    def event(self) -> str | None:
        return self.field("event")

    @property
    def body(self) -> dict[str, Any]:
        data = self.field("data")
        assert data is not None, self.lines
        parsed: dict[str, Any] = json.loads(data)
        return parsed

    @property
    def data(self) -> Any:
        return self.body["data"]


class SseReader:
    """Frames of one response: lines up to each blank line."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def next(self, timeout: float = 10.0) -> Frame | None:
        """The next frame, or None at the end of the stream."""
        frame = Frame()
        async with asyncio.timeout(timeout):
            while True:
                try:
                    line = await anext(self._lines)
                except StopAsyncIteration:
                    assert not frame.lines, f"stream ended inside a frame: {frame.lines}"
                    return None
                if line == "":
                    if frame.lines:
                        return frame
                    continue
                frame.lines.append(line)

    async def frame(self, timeout: float = 10.0) -> Frame:
        frame = await self.next(timeout)
        assert frame is not None, "stream ended"
        return frame

    async def frames(self, count: int) -> list[Frame]:
        return [await self.frame() for _ in range(count)]

    async def rest(self, timeout: float = 10.0) -> list[Frame]:
        """Every frame up to the end of the stream (the server closes it)."""
        frames: list[Frame] = []
        while (frame := await self.next(timeout)) is not None:
            frames.append(frame)
        return frames


@asynccontextmanager
async def subscribe(
    client: httpx.AsyncClient,
    session_id: str,
    *,
    last_event_id: str | None = None,
    query: str = "",
) -> AsyncIterator[SseReader]:
    headers = dict(SSE_HEADERS)
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    async with client.stream(
        "GET", f"/session/{session_id}/events{query}", headers=headers
    ) as response:
        assert response.status_code == 200, await response.aread()
        reader = SseReader(response)
        assert (await reader.frame()).lines == ["retry: 3000"]
        yield reader


async def eventually(predicate: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while True:
            if predicate():
                return
            await asyncio.sleep(0.01)


# -- refusals before the stream opens -----------------------------------------------------


async def test_unknown_or_closed_session_is_404(live: LiveApi) -> None:
    unknown = str(uuid.uuid4())
    closed = await live.new_session()
    await asyncio.to_thread(close_session, live.store, closed)
    async with live.client() as client:
        for sid in (unknown, closed):
            response = await client.get(f"/session/{sid}/events", headers=SSE_HEADERS)
            assert response.status_code == 404
            assert response.json() == {
                "error": f'No session with id "{sid}"',
                "code": "session_not_found",
                "sessionId": sid,
            }


@pytest.mark.parametrize("value", ["5", "4096", "abc", "", "16.5", "-20"])
async def test_max_queued_out_of_range_is_400(live: LiveApi, value: str) -> None:
    sid = await live.new_session()
    async with live.client() as client:
        response = await client.get(f"/session/{sid}/events?maxQueued={value}")
        assert response.status_code == 400
        assert response.json() == {
            "error": "`maxQueued` must be in [16, 2048]",
            "code": "invalid_max_queued",
        }
        # Checked before the session: even an unknown session gets the 400.
        response = await client.get(f"/session/{uuid.uuid4()}/events?maxQueued={value}")
        assert response.json()["code"] == "invalid_max_queued"


@pytest.mark.parametrize("value", ["16", "2048"])
async def test_max_queued_bounds_are_accepted(live: LiveApi, value: str) -> None:
    sid = await live.new_session()
    async with live.client() as client, subscribe(client, sid, query=f"?maxQueued={value}"):
        pass


# -- the stream -----------------------------------------------------------------------------


async def test_headers_and_retry_line(live: LiveApi) -> None:
    sid = await live.new_session()
    stream_ids = []
    async with live.client() as client:
        for _ in range(2):
            async with client.stream(
                "GET", f"/session/{sid}/events", headers=SSE_HEADERS
            ) as response:
                assert response.status_code == 200
                assert response.headers["content-type"] == "text/event-stream"
                assert response.headers["cache-control"] == "no-cache, no-transform"
                assert response.headers["x-accel-buffering"] == "no"
                assert response.headers["connection"] == "keep-alive"
                assert response.headers["transfer-encoding"] == "chunked"
                stream_ids.append(str(uuid.UUID(response.headers["x-qwen-sse-stream-id"])))
                lines = response.aiter_lines()
                assert await anext(lines) == "retry: 3000"
                assert await anext(lines) == ""
    assert stream_ids[0] != stream_ids[1]


async def test_live_frames_layout_and_envelope(live: LiveApi) -> None:
    sid = await live.new_session()
    stream = session_stream(sid)
    await live.append(sid, 2)  # before the subscription: not replayed without Last-Event-ID
    async with live.client() as client, subscribe(client, sid) as reader:
        await live.journal.aappend_many(
            stream,
            [
                session_event(
                    "session_update",
                    {"sessionUpdate": "agent_message_chunk", "content": {"text": "héllo\nworld"}},
                    prompt_id="p-1",
                    originator="client_1",
                )
            ],
        )
        frame = await reader.frame()
        assert frame.lines[:2] == ["id: 3", "event: session_update"]
        assert len(frame.lines) == 3 and frame.lines[2].startswith("data: {")
        body = frame.body
        assert body == {
            "id": 3,
            "v": 1,
            "type": "session_update",
            "data": {"sessionUpdate": "agent_message_chunk", "content": {"text": "héllo\nworld"}},
            "promptId": "p-1",
            "originatorClientId": "client_1",
            "_meta": {"serverTimestamp": body["_meta"]["serverTimestamp"]},
        }
        assert isinstance(body["_meta"]["serverTimestamp"], int)
        # One line of compact JSON, as JSON.stringify writes it.
        assert frame.lines[2] == "data: " + json.dumps(
            body, separators=(",", ":"), ensure_ascii=False
        )
        # Appends from another journal instance (another process) are polled.
        other = EventJournal(live.store)
        await asyncio.to_thread(other.append, stream, "turn_complete", {"data": {"x": 1}})
        frame = await reader.frame()
        assert (frame.id, frame.event, frame.body["id"], frame.data) == (
            4,
            "turn_complete",
            4,
            {"x": 1},
        )


async def test_last_event_id_replays_then_replay_complete_then_live(live: LiveApi) -> None:
    sid = await live.new_session()
    await live.append(sid, 5)
    async with live.client() as client:
        async with subscribe(client, sid, last_event_id="2") as reader:
            frames = await reader.frames(4)
            assert [f.id for f in frames[:3]] == [3, 4, 5]
            assert [f.body["id"] for f in frames[:3]] == [3, 4, 5]
            done = frames[3]
            assert done.lines[0] == "event: replay_complete" and done.id is None
            assert "id" not in done.body
            assert done.body["v"] == 1 and done.body["type"] == "replay_complete"
            assert done.data == {"lastReplayedEventId": 5, "lastEventId": 5, "replayedCount": 3}
            await live.append(sid, 1)
            assert (await reader.frame()).id == 6
        # Up to date (reference 046): replay_complete with replayedCount only.
        async with subscribe(client, sid, last_event_id="6") as reader:
            done = await reader.frame()
            assert (done.event, done.data) == ("replay_complete", {"replayedCount": 0})
        # Last-Event-ID: 0 replays everything (reference 044).
        async with subscribe(client, sid, last_event_id="0") as reader:
            frames = await reader.frames(7)
            assert [f.id for f in frames[:6]] == [1, 2, 3, 4, 5, 6]
            assert frames[6].data == {
                "lastReplayedEventId": 6,
                "lastEventId": 6,
                "replayedCount": 6,
            }


@pytest.mark.parametrize(
    ("header", "query"),
    [
        ("abc", ""),  # reference 048: not decimal, ignored
        ("-1", ""),
        ("6abc", ""),
        (None, "?lastEventId=2"),  # reference 049: the query parameter is not a cursor
    ],
)
async def test_cursor_that_is_not_a_last_event_id_header_is_ignored(
    live: LiveApi, header: str | None, query: str
) -> None:
    sid = await live.new_session()
    await live.append(sid, 5)
    async with live.client() as client:
        async with subscribe(client, sid, last_event_id=header, query=query) as reader:
            await live.append(sid, 1)
            frame = await reader.frame()  # no replay, no replay_complete: the live event
            assert (frame.id, frame.event) == (6, "session_update")


async def test_future_last_event_id_is_an_epoch_reset(live: LiveApi) -> None:
    sid = await live.new_session()
    await live.append(sid, 3)
    async with live.client() as client, subscribe(client, sid, last_event_id="999999") as reader:
        frames = await reader.frames(5)
        resync = frames[0]
        assert resync.lines[0] == "event: state_resync_required" and resync.id is None
        assert resync.data == {
            "reason": "epoch_reset",
            "lastDeliveredId": 999999,
            "earliestAvailableId": 1,
        }
        assert [f.id for f in frames[1:4]] == [1, 2, 3]
        assert frames[4].data == {"lastReplayedEventId": 3, "lastEventId": 3, "replayedCount": 3}


async def test_pruned_cursor_asks_for_resync_then_replays_from_earliest(live: LiveApi) -> None:
    sid = await live.new_session()
    await live.append(sid, 10, retention=5)  # ids 1..5 pruned: the journal holds 6..10
    async with live.client() as client:
        async with subscribe(client, sid, last_event_id="2") as reader:
            frames = await reader.frames(7)
            assert frames[0].event == "state_resync_required" and frames[0].id is None
            assert frames[0].data == {
                "reason": "ring_evicted",
                "lastDeliveredId": 2,
                "earliestAvailableId": 6,
            }
            assert [f.id for f in frames[1:6]] == [6, 7, 8, 9, 10]
            assert frames[6].data == {
                "lastReplayedEventId": 10,
                "lastEventId": 10,
                "replayedCount": 5,
            }
        # A cursor just before the window is no gap.
        async with subscribe(client, sid, last_event_id="5") as reader:
            assert (await reader.frame()).id == 6


async def test_replayed_frames_do_not_count_against_max_queued(live: LiveApi) -> None:
    sid = await live.new_session()
    await live.append(sid, 100)
    async with live.client() as client:
        async with subscribe(client, sid, last_event_id="0", query="?maxQueued=16") as reader:
            frames = await reader.frames(101)
            assert [f.id for f in frames[:100]] == list(range(1, 101))
            assert frames[100].event == "replay_complete"
            assert frames[100].data["replayedCount"] == 100
            await live.append(sid, 1)
            frame = await reader.frame()
            assert (frame.id, frame.event) == (101, "session_update")


async def test_slow_client_is_warned_once_then_evicted(live: LiveApi) -> None:
    # The writer pauses before each live frame; 40 events arrive at once for a
    # backlog of 16: it fills, warns at 12, and overflows.
    live.configure(live_frame_pause=0.03)
    sid = await live.new_session()
    async with live.client() as client:
        async with subscribe(client, sid, query="?maxQueued=16") as reader:
            await live.append(sid, 40)
            frames = await reader.rest()
    events = [f for f in frames if f.id is not None]
    synthetic = [f for f in frames if f.id is None]
    assert [f.id for f in events] == list(range(1, len(events) + 1))
    assert 16 <= len(events) < 40
    assert [f.event for f in synthetic] == ["slow_client_warning", "client_evicted"]
    warning, evicted = synthetic
    assert warning.lines[0] == "event: slow_client_warning"
    assert warning.data["queueSize"] == 12 and warning.data["maxQueued"] == 16
    assert isinstance(warning.data["lastEventId"], int)
    assert frames[-1] is evicted  # terminal: the server closed the stream after it
    assert evicted.body == {
        "v": 1,
        "type": "client_evicted",
        "data": {"reason": "queue_overflow", "droppedAfter": events[-1].id},
        "_meta": evicted.body["_meta"],
    }
    await eventually(lambda: live.subscribers(sid) == 0)
    # The evicted client reconnects from droppedAfter and misses nothing.
    live.configure()
    async with live.client() as client:
        async with subscribe(client, sid, last_event_id=str(events[-1].id)) as reader:
            replayed = await reader.frames(40 - len(events) + 1)
            assert [f.id for f in replayed[:-1]] == list(range(len(events) + 1, 41))
            assert replayed[-1].event == "replay_complete"


async def test_heartbeat_comment(live: LiveApi) -> None:
    live.configure(heartbeat_interval=0.05)
    sid = await live.new_session()
    async with live.client() as client, subscribe(client, sid) as reader:
        assert (await reader.frame()).lines == [": heartbeat"]
        await live.append(sid, 1)
        for _ in range(100):  # heartbeats keep coming around the live event
            frame = await reader.frame()
            if frame.id is not None:
                break
            assert frame.lines == [": heartbeat"]
        assert frame.id == 1


async def test_subscriber_limit_is_64_per_session(live: LiveApi) -> None:
    live.journal.poll_interval = 1.0  # 64 idle streams: in-process appends wake them anyway
    sid, other = await live.new_session(), await live.new_session()
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            httpx.AsyncClient(
                base_url=live.base_url, timeout=10, limits=httpx.Limits(max_connections=200)
            )
        )
        readers = [await stack.enter_async_context(subscribe(client, sid)) for _ in range(64)]
        assert live.subscribers(sid) == 64
        response = await client.get(f"/session/{sid}/events", headers=SSE_HEADERS)
        assert response.status_code == 429
        assert response.headers["retry-after"] == "5"
        assert response.json() == {
            "error": "EventBus subscriber limit reached (64)",
            "code": "subscriber_limit_exceeded",
            "limit": 64,
        }
        # The cap is per session.
        async with subscribe(client, other):
            assert live.subscribers(other) == 1
        # Every subscriber still gets live events.
        await live.append(sid, 1)
        for reader in readers:
            assert (await reader.frame()).id == 1
        # A disconnect frees its slot.
        await readers[0].response.aclose()
        await eventually(lambda: live.subscribers(sid) == 63)
        async with subscribe(client, sid):
            assert live.subscribers(sid) == 64
    await eventually(lambda: live.subscribers(sid) == 0 and live.subscribers(other) == 0)


async def test_session_closed_is_terminal(live: LiveApi) -> None:
    sid = await live.new_session()
    stream = session_stream(sid)
    async with live.client() as client, subscribe(client, sid) as reader:
        await live.append(sid, 1)
        await live.journal.aappend_many(
            stream,
            [
                session_event("session_closed", {"sessionId": sid, "reason": "client_close"}),
                session_event("session_update", {"late": True}),
            ],
        )
        frames = await reader.rest()
    assert [(f.id, f.event) for f in frames] == [(1, "session_update"), (2, "session_closed")]
    assert frames[1].data == {"sessionId": sid, "reason": "client_close"}
    await eventually(lambda: live.subscribers(sid) == 0)


async def test_replayed_session_closed_of_a_revived_session_is_not_terminal(
    live: LiveApi,
) -> None:
    sid = await live.new_session()
    await live.append(sid, 1)
    await live.journal.aappend(session_stream(sid), "session_closed", {"data": {"sessionId": sid}})
    # The session was loaded again: live, its journal still ends with session_closed.
    async with live.client() as client, subscribe(client, sid, last_event_id="0") as reader:
        frames = await reader.frames(3)
        assert [f.event for f in frames] == ["session_update", "session_closed", "replay_complete"]
        await live.append(sid, 1)
        assert (await reader.frame()).id == 3


class _BrokenJournal(EventJournal):
    async def wait(
        self, stream: str, after: int, timeout: float, *, limit: int = 1000
    ) -> JournalPage:
        raise RuntimeError("journal unavailable")


async def test_error_while_serving_is_a_terminal_stream_error(live: LiveApi) -> None:
    sid = await live.new_session()
    live.app.state.journal = _BrokenJournal(live.store)
    async with live.client() as client, subscribe(client, sid) as reader:
        frames = await reader.rest()
    assert len(frames) == 1
    (error,) = frames
    assert error.lines[0] == "event: stream_error" and error.id is None
    assert error.body["type"] == "stream_error"
    assert error.data == {"error": "journal unavailable"}
    await eventually(lambda: live.subscribers(sid) == 0)


async def test_reconnect_after_an_api_restart_continues_without_gap(tmp_path: Path) -> None:
    async with serve(tmp_path) as first:
        sid = await first.new_session()
        await first.append(sid, 10)
        async with first.client() as client, subscribe(client, sid, last_event_id="0") as reader:
            seen = [(await reader.frame()).id for _ in range(4)]
        assert seen == [1, 2, 3, 4]
        url = first.settings.resolved_database_url
    # While no API runs, the worker keeps appending.
    store = Store(url)
    try:
        down = EventJournal(store)
        for _ in range(3):
            await asyncio.to_thread(down.append, session_stream(sid), "session_update", {})
    finally:
        store.dispose()
    async with serve(tmp_path) as second:
        async with second.client() as client, subscribe(client, sid, last_event_id="4") as reader:
            frames = await reader.frames(10)
            assert [f.id for f in frames[:9]] == list(range(5, 14))
            assert frames[9].data == {
                "lastReplayedEventId": 13,
                "lastEventId": 13,
                "replayedCount": 9,
            }
            await second.append(sid, 1)
            assert (await reader.frame()).id == 14
