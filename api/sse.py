"""Server-sent events for a session's journal stream: frames, subscribers, the stream body.

A stream is written by one consumer (the response body generator) and fed, once
the replay is written, by one producer task that tails the journal into the
subscriber's bounded backlog (`runtime.backpressure`). A subscriber that
does not read fills its backlog: it gets a `slow_client_warning` at 75 %, then a
terminal `client_evicted` and the response ends. Replayed frames are written
directly and never count against the backlog.

Frames follow the reference daemon byte for byte: `retry: 3000` first, then
`id: N` / `event: TYPE` / `data: <envelope JSON on one line>`, synthetic frames
without `id:`, and a `: heartbeat` comment every 15 s.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from opentelemetry import metrics
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from api.errors import ApiError
from runtime.backpressure import (
    DEFAULT_MAX_QUEUED,
    INVALID_MAX_QUEUED,
    MAX_MAX_QUEUED,
    MIN_MAX_QUEUED,
    Backlog,
    Offer,
    SubscriberLimitExceeded,
    parse_max_queued,
)
from runtime.sessions.streams import envelope, synthetic
from runtime.store.journal import EventJournal, JournalEntry

log = logging.getLogger(__name__)

RETRY_MS = 3000
HEARTBEAT_INTERVAL = 15.0
MAX_SUBSCRIBERS_PER_SESSION = 64
REPLAY_PAGE = 500
LIVE_WAIT = 30.0
SESSION_CLOSED = "session_closed"

RETRY_FRAME = f"retry: {RETRY_MS}\n\n".encode()
HEARTBEAT_FRAME = b": heartbeat\n\n"

_meter = metrics.get_meter("agentrt.sse")
_warnings = _meter.create_counter(
    "agentrt.sse.slow_client_warnings", description="slow_client_warning frames sent"
)
_evictions = _meter.create_counter(
    "agentrt.sse.client_evictions", description="SSE subscribers evicted on queue overflow"
)


@dataclass
class SseConfig:
    """Knobs of the SSE route; tests replace `app.state.sse_config` to shrink them."""

    heartbeat_interval: float = HEARTBEAT_INTERVAL
    max_subscribers: int = MAX_SUBSCRIBERS_PER_SESSION
    # Test hook: pause before writing each backlog frame, as a slow reader would.
    live_frame_pause: float = 0.0


def sse_config(app: FastAPI) -> SseConfig:
    config = getattr(app.state, "sse_config", None)
    if not isinstance(config, SseConfig):
        config = SseConfig()
        app.state.sse_config = config
    return config


class SubscriberRegistry:
    """Live SSE streams per session in this API process (the per-session cap)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def acquire(self, session_id: str, limit: int) -> bool:
        count = self._counts.get(session_id, 0)
        if count >= limit:
            return False
        self._counts[session_id] = count + 1
        return True

    def release(self, session_id: str) -> None:
        count = self._counts.get(session_id, 0) - 1
        if count > 0:
            self._counts[session_id] = count
        else:
            self._counts.pop(session_id, None)

    def count(self, session_id: str) -> int:
        return self._counts.get(session_id, 0)


def subscriber_registry(app: FastAPI) -> SubscriberRegistry:
    registry = getattr(app.state, "sse_subscribers", None)
    if not isinstance(registry, SubscriberRegistry):
        registry = SubscriberRegistry()
        app.state.sse_subscribers = registry
    return registry


class StreamShutdown:
    """Ends this process's open streams when the server is asked to stop.

    An SSE stream never ends on its own, so uvicorn's graceful shutdown would wait its
    whole timeout for them. `close_all` (called from the server's signal handler) wakes
    every stream, which then returns; clients reconnect to the next process with
    `Last-Event-ID` and lose nothing (the journal holds the events).
    """

    def __init__(self) -> None:
        self.closing = False
        self._streams: dict[asyncio.Event, asyncio.AbstractEventLoop] = {}

    def register(self, wake: asyncio.Event) -> None:
        self._streams[wake] = asyncio.get_running_loop()

    def unregister(self, wake: asyncio.Event) -> None:
        self._streams.pop(wake, None)

    def close_all(self) -> None:
        """Safe from a signal handler or another thread."""
        self.closing = True
        for wake, loop in list(self._streams.items()):
            if not loop.is_closed():
                loop.call_soon_threadsafe(wake.set)

    def count(self) -> int:
        return len(self._streams)


def stream_shutdown(app: FastAPI) -> StreamShutdown:
    shutdown = getattr(app.state, "sse_shutdown", None)
    if not isinstance(shutdown, StreamShutdown):
        shutdown = StreamShutdown()
        app.state.sse_shutdown = shutdown
    return shutdown


def parse_last_event_id(raw: str | None) -> int | None:
    """`Last-Event-ID` as the reference parses it: decimal digits only, else ignored."""
    if raw is None or not (raw.isascii() and raw.isdigit()):
        return None
    try:
        return int(raw)
    except ValueError:  # more digits than int() accepts
        return None


# -- frames ---------------------------------------------------------------------------------


def _json(body: Mapping[str, Any]) -> str:
    """One line of JSON, as JSON.stringify writes it (no spaces, UTF-8 kept)."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:  # lone surrogates: escape them, as JSON.stringify does
        text = json.dumps(body, separators=(",", ":"))
    return text


def event_frame(entry: JournalEntry) -> bytes:
    return f"id: {entry.seq}\nevent: {entry.type}\ndata: {_json(envelope(entry))}\n\n".encode()


def synthetic_frame(type: str, data: dict[str, Any]) -> bytes:
    """A frame outside the journal: no `id:` line, so it burns no sequence number."""
    body = synthetic(type, data, int(time.time() * 1000))
    return f"event: {type}\ndata: {_json(body)}\n\n".encode()


def resync_frame(reason: str, last_delivered: int, earliest: int) -> bytes:
    return synthetic_frame(
        "state_resync_required",
        {"reason": reason, "lastDeliveredId": last_delivered, "earliestAvailableId": earliest},
    )


# -- the stream -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamStart:
    """Where a subscriber starts, fixed when its request is accepted."""

    session_id: str
    stream: str
    max_queued: int
    last_event_id: int | None  # None: live events only
    earliest: int  # the journal's bounds at subscribe time
    last: int


async def event_stream(
    journal: EventJournal,
    start: StreamStart,
    config: SseConfig,
    session_live: Callable[[], Awaitable[bool]],
    detach: Callable[[], None] = lambda: None,
    shutdown: StreamShutdown | None = None,
) -> AsyncGenerator[bytes, None]:
    """The response body: retry line, replay, `replay_complete`, then live frames.

    `detach` runs once the subscriber stops taking events (evicted, session closed,
    error), before its last frames are written: like the reference bus, a stalled
    evicted client no longer holds a subscriber slot while its socket drains.
    """
    backlog: Backlog[bytes] = Backlog(start.max_queued)
    wake = asyncio.Event()
    producer: asyncio.Task[None] | None = None
    shutdown = shutdown or StreamShutdown()
    shutdown.register(wake)
    try:
        yield RETRY_FRAME
        cursor = start.last
        if start.last_event_id is not None:
            replay = _Replay(journal, start)
            async with aclosing(replay.frames()) as frames:
                async for frame in frames:
                    yield frame
            yield synthetic_frame("replay_complete", replay.summary())
            cursor = replay.cursor
            if replay.last_type == SESSION_CLOSED and not await session_live():
                return
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + config.heartbeat_interval
        producer = asyncio.create_task(
            _produce(journal, start.stream, cursor, backlog, wake),
            name=f"sse-producer/{start.session_id}",
        )

        def producer_done(_task: asyncio.Task[None]) -> None:
            detach()
            wake.set()

        producer.add_done_callback(producer_done)
        while not shutdown.closing:
            now = loop.time()
            if now >= next_beat:
                next_beat = now + config.heartbeat_interval
                yield HEARTBEAT_FRAME
                continue
            queued = backlog.pop()
            if queued is not None:
                if config.live_frame_pause > 0:
                    await asyncio.sleep(config.live_frame_pause)
                yield queued
                continue
            if backlog.closed:
                return  # terminal frame written (client_evicted or session_closed)
            if producer.done():
                producer.result()  # re-raises the producer's error (-> stream_error)
                return
            wake.clear()
            try:
                async with asyncio.timeout(max(0.0, next_beat - loop.time())):
                    await wake.wait()
            except TimeoutError:
                pass
    except Exception as err:
        log.exception("SSE stream of session %s failed", start.session_id)
        yield synthetic_frame("stream_error", {"error": str(err) or type(err).__name__})
    finally:
        shutdown.unregister(wake)
        if producer is not None:
            producer.cancel()


class _Replay:
    """The journal entries after the client's `Last-Event-ID`, up to the end at subscribe time."""

    def __init__(self, journal: EventJournal, start: StreamStart) -> None:
        self.journal = journal
        self.start = start
        assert start.last_event_id is not None
        self.cursor = start.last_event_id
        self.count = 0
        self.last_type: str | None = None

    async def frames(self) -> AsyncGenerator[bytes, None]:
        start = self.start
        reported: int | None = None
        if self.cursor > start.last:
            # An id this stream never produced: the cursor is from another epoch.
            yield resync_frame("epoch_reset", self.cursor, start.earliest)
            self.cursor = reported = 0
        while self.cursor < start.last:
            page = await self.journal.aread(start.stream, self.cursor, REPLAY_PAGE)
            if page.cursor_expired(self.cursor) and reported != self.cursor:
                # Entries after the cursor were pruned by retention before this read.
                yield resync_frame("ring_evicted", self.cursor, page.earliest_seq)
                reported = self.cursor
            entries = [entry for entry in page.entries if entry.seq <= start.last]
            if not entries:
                return
            # One write per page, not per frame: the bytes are the same, and a replay of
            # thousands of events no longer pays the per-write cost of the ASGI stack.
            yield b"".join(event_frame(entry) for entry in entries)
            self.cursor = entries[-1].seq
            self.last_type = entries[-1].type
            self.count += len(entries)

    def summary(self) -> dict[str, Any]:
        if self.count == 0:
            return {"replayedCount": 0}
        return {
            "lastReplayedEventId": self.cursor,
            "lastEventId": self.cursor,
            "replayedCount": self.count,
        }


async def _produce(
    journal: EventJournal, stream: str, cursor: int, backlog: Backlog[bytes], wake: asyncio.Event
) -> None:
    """Tail the journal after `cursor` into the backlog until eviction or session_closed."""
    while True:
        page = await journal.wait(stream, cursor, LIVE_WAIT)
        if page.entries and page.cursor_expired(cursor):
            backlog.force(resync_frame("ring_evicted", cursor, page.earliest_seq))
        for entry in page.entries:
            outcome = backlog.offer(event_frame(entry))
            if outcome is Offer.EVICT:
                backlog.force(
                    synthetic_frame(
                        "client_evicted", {"reason": "queue_overflow", "droppedAfter": cursor}
                    )
                )
                backlog.close()
                wake.set()
                _evictions.add(1)
                log.warning(
                    "SSE subscriber of %s evicted: %d frames queued (maxQueued), dropped after %d",
                    stream,
                    backlog.state.queued,
                    cursor,
                )
                return
            if outcome is Offer.WARN:
                backlog.force(
                    synthetic_frame(
                        "slow_client_warning",
                        {
                            "queueSize": backlog.state.queued,
                            "maxQueued": backlog.state.max_queued,
                            "lastEventId": entry.seq,
                        },
                    )
                )
                _warnings.add(1)
            cursor = entry.seq
            wake.set()
            if entry.type == SESSION_CLOSED:
                backlog.close()
                return
            # Let the writer take the frame before the next one: a reader that keeps up
            # never accumulates a backlog, even from a large batch of appends.
            await asyncio.sleep(0)


class EventStreamResponse(StreamingResponse):
    """A streaming response whose `on_close` runs however the stream ends."""

    def __init__(
        self,
        content: AsyncGenerator[bytes, None],
        *,
        headers: Mapping[str, str],
        on_close: Callable[[], None],
    ) -> None:
        super().__init__(content, headers=dict(headers))
        self._content = content
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()
            # A generator left suspended at a `yield` (client gone mid-write) is closed
            # now, so its producer task stops at once rather than at garbage collection.
            try:
                await self._content.aclose()
            except Exception:
                log.debug("closing an SSE body failed", exc_info=True)


def stream_openapi() -> dict[str, Any]:
    """What a journal stream's route documents beside its path (its `openapi_extra`): the
    `maxQueued` query parameter and the `Last-Event-ID` header it reads."""
    return {
        "parameters": [
            {
                "name": "maxQueued",
                "in": "query",
                "schema": {
                    "type": "integer",
                    "minimum": MIN_MAX_QUEUED,
                    "maximum": MAX_MAX_QUEUED,
                    "default": DEFAULT_MAX_QUEUED,
                },
                "description": "Live frames queued for this subscriber before eviction.",
            },
            {
                "name": "Last-Event-ID",
                "in": "header",
                "schema": {"type": "string", "pattern": "^[0-9]+$"},
                "description": "Replay the journal after this id (`0`: from the start).",
            },
        ]
    }


def max_queued_param(request: Request) -> int:
    """The `maxQueued` query parameter (at most once), or 400 `invalid_max_queued`."""
    values = request.query_params.getlist("maxQueued")
    try:
        if len(values) > 1:
            raise ValueError(values)
        return parse_max_queued(values[0] if values else None)
    except ValueError:
        raise ApiError.of(INVALID_MAX_QUEUED) from None


async def journal_sse_response(
    request: Request,
    journal: EventJournal,
    *,
    stream: str,
    subscriber_key: str,
    session_id: str,
    max_queued: int,
    live: Callable[[], Awaitable[bool]],
) -> Response:
    """A journal stream as SSE: replay from `Last-Event-ID`, then live, with the per-key
    subscriber limit (429 `subscriber_limit_exceeded`). Ids are durable (the journal), so
    the stream's epoch (`X-Qwen-Event-Epoch`) is its key and never changes."""
    earliest, last = await asyncio.to_thread(journal.bounds, stream)
    start = StreamStart(
        session_id=session_id,
        stream=stream,
        max_queued=max_queued,
        last_event_id=parse_last_event_id(request.headers.get("last-event-id")),
        earliest=earliest,
        last=last,
    )
    config = sse_config(request.app)
    registry = subscriber_registry(request.app)
    if not registry.acquire(subscriber_key, config.max_subscribers):
        raise ApiError.of(SubscriberLimitExceeded(limit=config.max_subscribers))
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            registry.release(subscriber_key)

    return EventStreamResponse(
        event_stream(journal, start, config, live, release, stream_shutdown(request.app)),
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache, no-transform",
            "Connection": "keep-alive",
            "X-Accel-Buffering": "no",
            "X-Qwen-SSE-Stream-Id": str(uuid.uuid4()),
            "X-Qwen-Event-Epoch": subscriber_key,
        },
        on_close=release,
    )
