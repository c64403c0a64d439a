"""The daemon's client side for benchmarks: a few HTTP calls and a lean SSE reader.

The client may share the benchmark's process (and CPU) with the API, so the SSE reader does
as little as it can: it splits the raw body on blank lines and parses a frame only when
asked. Frames are written by `api.sse` with `\\n` line ends, one `data:` line each.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx

from bench.report import elapsed_ms

SEPARATOR = b"\n\n"
SSE_HEADERS = {"Accept": "text/event-stream"}
PROMPT = "say hello to the daemon"
READY_TIMEOUT_S = 120.0
# A stream that has not delivered what it should after this long is a failure.
STREAM_TIMEOUT_S = 60.0


def expect(response: httpx.Response, status: int) -> None:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path} answered "
            f"{response.status_code}, expected {status}: {response.text[:500]}"
        )


async def wait_worker_polling(
    http: httpx.AsyncClient, alive: Callable[[], bool], log: Path
) -> None:
    """Until GET /daemon/status says a worker polls the daemon's task queue (the API may
    not answer yet: connection errors are retried). `alive` is False once the process
    serving or working has exited, whose `log` then tells why."""
    async with asyncio.timeout(READY_TIMEOUT_S):
        while True:
            if not alive():
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
                raise RuntimeError(f"a daemon process exited early; {log}:\n{tail}")
            try:
                status = await http.get("/daemon/status", params={"detail": "full"})
                if status.status_code == 200 and status.json()["temporal"]["workerPolling"]:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)


def prompt_body(text: str = PROMPT) -> dict[str, Any]:
    return {"prompt": [{"type": "text", "text": text}]}


async def create_session(http: httpx.AsyncClient) -> tuple[str, float]:
    """POST /session (thread scope): the new session's id and the request's duration (ms)."""
    started = time.perf_counter()
    response = await http.post("/session", json={"sessionScope": "thread"})
    duration = elapsed_ms(started)
    expect(response, 200)
    body: dict[str, Any] = response.json()
    if body.get("attached") is not False:
        raise RuntimeError(f"a thread-scoped create attached: {body}")
    return str(body["sessionId"]), duration


async def confirm_running(http: httpx.AsyncClient, session_id: str) -> None:
    """The session's workflow answered a query: its worker holds it."""
    expect(await http.get(f"/session/{session_id}/context"), 200)


async def prompt_prefer_wait(http: httpx.AsyncClient, session_id: str) -> float:
    """POST …/prompt with `Prefer: wait` → 200 {"stopReason": "end_turn"}; its duration."""
    started = time.perf_counter()
    response = await http.post(
        f"/session/{session_id}/prompt", json=prompt_body(), headers={"Prefer": "wait"}
    )
    duration = elapsed_ms(started)
    expect(response, 200)
    if response.json() != {"stopReason": "end_turn"}:
        raise RuntimeError(f"Prefer: wait answered {response.json()}")
    return duration


@contextlib.asynccontextmanager
async def open_stream(
    http: httpx.AsyncClient, session_id: str, *, last_event_id: str | None = None
) -> AsyncIterator[FrameReader]:
    """GET /session/{id}/events, read past its `retry:` line."""
    headers = dict(SSE_HEADERS)
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    async with http.stream("GET", f"/session/{session_id}/events", headers=headers) as response:
        if response.status_code != 200:
            await response.aread()
            expect(response, 200)
        reader = FrameReader(response)
        first = await reader.next()
        if first != b"retry: 3000":
            raise RuntimeError(f"the stream of {session_id} began with {first!r}")
        yield reader


class FrameReader:
    """Frames of one response body, in order; `None` once the body ends."""

    def __init__(self, response: httpx.Response) -> None:
        self._chunks: AsyncIterator[bytes] = response.aiter_raw()
        self._buffer = b""
        self._frames: deque[bytes] = deque()

    async def next(self) -> bytes | None:
        while not self._frames:
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                return None
            parts = (self._buffer + chunk).split(SEPARATOR)
            self._buffer = parts.pop()
            self._frames.extend(part for part in parts if part)
        return self._frames.popleft()

    def drain(self) -> list[bytes]:
        """The frames already received and not read yet (no waiting)."""
        frames = list(self._frames)
        self._frames.clear()
        return frames

    async def batch(self) -> list[bytes] | None:
        """At least one frame, plus every frame already received; `None` at the end."""
        first = await self.next()
        if first is None:
            return None
        return [first, *self.drain()]


async def receive_until(reader: FrameReader, last_seq: int) -> int:
    """Read frames until event `last_seq`; returns the slow_client_warning count."""
    warnings = 0
    seen = 0
    while seen < last_seq:
        frames = await reader.batch()
        if frames is None:
            raise RuntimeError(f"stream ended at event {seen} of {last_seq}")
        for frame in frames:
            seq = event_id(frame)
            if seq is not None:
                seen = seq
                continue
            kind = event_type(frame)
            if kind == "slow_client_warning":
                warnings += 1
            elif kind in ("client_evicted", "stream_error", "state_resync_required"):
                raise RuntimeError(f"subscriber got {kind} at event {seen}: {frame[:300]!r}")
    return warnings


async def replay_run(http: httpx.AsyncClient, session_id: str, events: int) -> float:
    started = time.perf_counter()
    replayed = 0
    async with open_stream(http, session_id, last_event_id="0") as reader:
        async with asyncio.timeout(STREAM_TIMEOUT_S):
            while True:
                frame = await reader.next()
                if frame is None:
                    raise RuntimeError("stream ended before replay_complete")
                if frame.startswith(b"id: "):
                    replayed += 1
                elif event_type(frame) == "replay_complete":
                    duration = elapsed_ms(started)
                    summary = envelope(frame)["data"]
                    break
    if replayed != events or summary.get("replayedCount") != events:
        raise RuntimeError(f"replayed {replayed} frames, summary {summary}; expected {events}")
    return duration


def split_frames(body: bytes) -> list[bytes]:
    """A whole body's frames (for measuring the client's own cost offline)."""
    return [part for part in body.split(SEPARATOR) if part]


def field(frame: bytes, name: str) -> str | None:
    prefix = f"{name}: ".encode()
    for line in frame.split(b"\n"):
        if line.startswith(prefix):
            return line[len(prefix) :].decode()
    return None


def event_type(frame: bytes) -> str | None:
    return field(frame, "event")


def event_id(frame: bytes) -> int | None:
    """The frame's `id:` (journal events only; synthetic frames have none)."""
    if not frame.startswith(b"id: "):
        return None
    return int(frame[4 : frame.index(b"\n")])


def envelope(frame: bytes) -> dict[str, Any]:
    data = field(frame, "data")
    if data is None:
        raise ValueError(f"frame without data: {frame[:200]!r}")
    parsed: dict[str, Any] = json.loads(data)
    return parsed
