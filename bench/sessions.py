"""Session daemon figures: create, prompt round trip, SSE throughput and replay, RSS.

Figures (1)–(4) run against a daemon started here (`bench.daemon`): the API under uvicorn
in this process on a free loopback port, read over real HTTP the way a client reads it,
and a real worker (`agentrt worker`) in its own process, on one dev server started with
the embedded daemon's arguments. The Temporal primitives they are built from are measured
first, in this process, on the same server, and quoted as ratios. The SSE streams of (3)
and (4) are read by a subscriber process (`bench.subscriber`). Figure (5) runs a real
`agentrt up` (`bench.rss`).

1. POST /session {"sessionScope": "thread"} → 200; the first one after the daemon started
   is reported apart;
2. prompt with the scripted model: POST …/prompt → 202, then `turn_complete` of that
   prompt read from the session's SSE stream (opened first); and `Prefer: wait` → 200;
3. SSE delivery: N journal events appended through the API's journal, events/s until every
   subscriber (1, then 10) has read them all;
4. replay: GET …/events with `Last-Event-ID: 0` on a session of 8,000 events, until the
   `replay_complete` frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from api.sse import event_frame
from bench import rss
from bench.client import (
    FrameReader,
    confirm_running,
    create_session,
    envelope,
    event_id,
    expect,
    open_stream,
    prompt_body,
    prompt_prefer_wait,
    split_frames,
)
from bench.daemon import LiveDaemon, live_daemon
from bench.machine import machine_facts
from bench.procs import CpuMeter, children, cmdline, format_cpu, role
from bench.report import BenchOptions, Figure, Part, Report, Target, elapsed_ms, sample
from bench.stats import median
from bench.substrate import (
    TUNED_DEV_SERVER_ARGS,
    SubstrateBaseline,
    measure_substrate,
    start_dev_server,
)
from bench.substrate_workflows import EmptyWorkflow, Ping
from runtime.sessions.streams import session_event
from runtime.store import EventJournal
from runtime.store.journal_contracts import NewEvent
from runtime.streams import session_stream
from runtime.temporal import ensure_search_attributes, temporal_cli_path

DEFAULT_RUNS = 50
# A step that has not finished after this long is a failure, not a slow sample.
PHASE_TIMEOUT_S = 60.0

THROUGHPUT_EVENTS = 2000
# Appends of this many events per transaction, back to back (a busy worker's batches).
APPEND_BATCH = 100
SUBSCRIBER_COUNTS = (1, 10)
REPLAY_EVENTS = 8000
REPLAY_PAGE = 500
BREAKDOWN_RUNS = 5

# The same targets as the cross-checks of (5).
CREATE_TARGET = rss.CREATE_TARGET
PROMPT_TARGET = rss.PROMPT_TARGET
REPLAY_TARGET = Target(200)


def heavy_runs(runs: int) -> int:
    """Runs of the figures that move thousands of events per run (3, 4)."""
    return max(3, runs // 5)


def _chunk(session_id: str, n: int) -> NewEvent:
    """An event as a streaming model writes them: one agent message chunk."""
    return session_event(
        "session_update",
        {
            "sessionId": session_id,
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": f"token {n} "},
            },
        },
        prompt_id="bench-prompt",
    )


# -- (1) create ------------------------------------------------------------------------------


async def measure_start_workflow(client: Client, options: BenchOptions) -> Figure:
    """The substrate floor of a create: one start_workflow RPC, answered by the server alone
    (no worker polls the fresh queue, so nothing else runs meanwhile)."""
    task_queue = f"bench-start-{uuid.uuid4().hex[:12]}"
    seq = 0

    async def start() -> float:
        nonlocal seq
        seq += 1
        started = time.perf_counter()
        await client.start_workflow(
            EmptyWorkflow.run, Ping(seq=seq), id=f"{task_queue}/{seq}", task_queue=task_queue
        )
        return elapsed_ms(started)

    samples = await sample(start, runs=options.runs, warmup=options.warmup)
    return Figure("(s) start_workflow → handle (no worker)", samples)


# -- (2) prompt round trip -------------------------------------------------------------------


@dataclass(frozen=True)
class PromptSample:
    accepted_ms: float  # POST → 202
    completed_ms: float  # POST → turn_complete read on the stream
    events: int  # frames of this prompt on the stream


async def prompt_over_sse(
    http: httpx.AsyncClient, session_id: str, reader: FrameReader
) -> PromptSample:
    started = time.perf_counter()
    response = await http.post(f"/session/{session_id}/prompt", json=prompt_body())
    accepted = elapsed_ms(started)
    expect(response, 202)
    prompt_id = str(response.json()["promptId"])
    events = 0
    async with asyncio.timeout(PHASE_TIMEOUT_S):
        while True:
            frame = await reader.next()
            if frame is None:
                raise RuntimeError(f"the stream of {session_id} ended before turn_complete")
            if event_id(frame) is None:
                continue  # heartbeat or synthetic frame
            body = envelope(frame)
            if body.get("promptId") != prompt_id:
                continue
            events += 1
            if body["type"] == "turn_complete":
                if body["data"].get("stopReason") != "end_turn":
                    raise RuntimeError(f"prompt {prompt_id} ended with {body['data']}")
                return PromptSample(accepted, elapsed_ms(started), events)


# -- (3) SSE delivery throughput -------------------------------------------------------------


@dataclass(frozen=True)
class ThroughputSample:
    events_per_s: float
    append_ms: float  # the appends alone, for context
    warnings: int  # slow_client_warning frames, all subscribers


async def _append_all(journal: EventJournal, stream: str, events: Sequence[NewEvent]) -> float:
    started = time.perf_counter()
    for first in range(0, len(events), APPEND_BATCH):
        await journal.aappend_many(stream, events[first : first + APPEND_BATCH])
    return elapsed_ms(started)


class Subscribers:
    """The subscriber process (`bench.subscriber`): SSE streams read outside this process."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    @contextlib.asynccontextmanager
    async def start(cls, base_url: str) -> AsyncIterator[Subscribers]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.subscriber",
            base_url,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            yield cls(process)
        finally:
            if process.stdin is not None:
                process.stdin.close()
            try:
                async with asyncio.timeout(10):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()

    async def ask(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        await self.process.stdin.drain()

    async def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        async with asyncio.timeout(PHASE_TIMEOUT_S):
            line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the subscriber process exited ({await self.process.wait()})")
        body: dict[str, Any] = json.loads(line)
        return body


async def throughput_run(
    daemon: LiveDaemon, http: httpx.AsyncClient, subscribers: Subscribers, count: int, events: int
) -> ThroughputSample:
    session_id, _ = await create_session(http)
    stream = session_stream(session_id)
    batch = [_chunk(session_id, n) for n in range(events)]
    _, last = await asyncio.to_thread(daemon.journal.bounds, stream)
    await subscribers.ask({"stream": session_id, "subscribers": count, "last": last + events})
    await subscribers.answer()  # every stream open
    started = time.perf_counter()
    appending = asyncio.create_task(_append_all(daemon.journal, stream, batch))
    done = await subscribers.answer()
    duration = elapsed_ms(started)
    append_ms = await appending
    return ThroughputSample(events / (duration / 1000), append_ms, int(done["warnings"]))


# -- (4) replay ------------------------------------------------------------------------------


async def fill_session(journal: EventJournal, session_id: str, events: int) -> None:
    stream = session_stream(session_id)
    for first in range(0, events, REPLAY_PAGE):
        count = min(REPLAY_PAGE, events - first)
        await journal.aappend_many(stream, [_chunk(session_id, first + n) for n in range(count)])


@dataclass(frozen=True)
class ReplayBreakdown:
    """The replay's parts, timed apart once each (ms)."""

    db_read_ms: float  # every page read from SQLite, as the route reads them
    encode_ms: float  # envelope + JSON of every frame
    client_split_ms: float  # the client splitting the whole body into frames
    body_bytes: int


async def replay_breakdown(journal: EventJournal, session_id: str) -> ReplayBreakdown:
    stream = session_stream(session_id)
    started = time.perf_counter()
    entries = []
    cursor = 0
    while True:
        page = await journal.aread(stream, cursor, REPLAY_PAGE)
        if not page.entries:
            break
        entries += page.entries
        cursor = page.entries[-1].seq
    db_read = elapsed_ms(started)
    started = time.perf_counter()
    body = b"".join(event_frame(entry) for entry in entries)
    encode = elapsed_ms(started)
    started = time.perf_counter()
    frames = split_frames(body)
    sum(1 for frame in frames if frame.startswith(b"id: "))
    split = elapsed_ms(started)
    return ReplayBreakdown(db_read, encode, split, len(body))


# -- the benchmarks --------------------------------------------------------------------------


async def measure_session_figures(
    client: Client, daemon: LiveDaemon, baseline: SubstrateBaseline, options: BenchOptions
) -> Part:
    """(1) and (2) on a daemon that has created no session yet (for the first create)."""
    start_only = await measure_start_workflow(client, options)
    pids = _daemon_pids(daemon)
    operations = options.runs + options.warmup
    async with daemon.client() as http:
        first_id, first_ms = await create_session(http)
        await confirm_running(http, first_id)
        meter = CpuMeter.start(pids)
        creates = await sample(
            lambda: _isolated_create(http), runs=options.runs, warmup=options.warmup
        )
        create_cpu = meter.per_op_ms(operations)

        sse_session, _ = await create_session(http)
        async with open_stream(http, sse_session) as reader:
            meter = CpuMeter.start(pids)
            for _ in range(options.warmup):
                await prompt_over_sse(http, sse_session, reader)
            prompts = [
                await prompt_over_sse(http, sse_session, reader) for _ in range(options.runs)
            ]
            prompt_cpu = meter.per_op_ms(operations)
        wait_session, _ = await create_session(http)
        meter = CpuMeter.start(pids)
        waits = await sample(
            lambda: prompt_prefer_wait(http, wait_session), runs=options.runs, warmup=options.warmup
        )
        wait_cpu = meter.per_op_ms(operations)
    reference = baseline.update_local_activity
    figures = (
        Figure("(1) POST /session (thread) → 200", creates)
        .against(start_only)
        .with_target(CREATE_TARGET),
        Figure("(1) first POST /session after start", (first_ms,)).against(start_only),
        start_only,
        Figure("(2) prompt POST → 202", tuple(p.accepted_ms for p in prompts)).against(reference),
        Figure("(2) prompt → turn_complete on SSE", tuple(p.completed_ms for p in prompts))
        .against(reference)
        .with_target(PROMPT_TARGET),
        Figure("(2) prompt Prefer: wait → 200", waits)
        .against(reference)
        .with_target(PROMPT_TARGET),
        reference,
    )
    events = sorted({p.events for p in prompts})
    notes = (
        "(1) is quoted against (s), the one start_workflow RPC a create makes. Each timed "
        "create is followed, untimed, by GET …/context (a query the worker answers once the "
        "new workflow's first task ran), so creates do not overlap the work the previous one "
        "started. The first create is the API's first POST /session, once its worker polls "
        "(dev server and Temporal client already warm; see (5) for a cold `agentrt up`; "
        "reference daemon: 1.1 s).",
        "(2) is quoted against the substrate's (e) update running 1 local activity: a "
        "prompt is an update, then the session workflow runs the scripted model and the "
        "journal appends as local activities. One session per (2) figure, "
        f"prompts back to back; the stream (live only) is opened first; "
        f"{'/'.join(map(str, events))} frames per prompt on it.",
        "CPU time per operation by process (ms; /proc utime+stime over all runs, warm-up "
        f"included): create (+ its first workflow task and the query): "
        f"{format_cpu(create_cpu)}; prompt over SSE: "
        f"{format_cpu(prompt_cpu)}; Prefer: wait: {format_cpu(wait_cpu)}.",
    )
    return Part(figures, notes)


def _daemon_pids(daemon: LiveDaemon) -> dict[str, int]:
    """The processes a request goes through: this one (API, client), worker, dev server."""
    pids = {"API+client": os.getpid(), "worker": daemon.worker_pid}
    for child in children(os.getpid()):
        if role(cmdline(child)) == "temporal":
            pids["Temporal"] = child
    return pids


async def _isolated_create(http: httpx.AsyncClient) -> float:
    """A timed create, then (untimed) its workflow's first task, so the work a create starts
    in the worker and the server is over before the next one: each create is measured on
    an otherwise idle daemon, as a client opening one session sees it."""
    session_id, duration = await create_session(http)
    await confirm_running(http, session_id)
    return duration


async def measure_sse_figures(daemon: LiveDaemon, options: BenchOptions) -> Part:
    runs = heavy_runs(options.runs)
    figures: list[Figure] = []
    notes: list[str] = []
    async with daemon.client() as http, Subscribers.start(daemon.base_url) as subscribers:
        pids = {"API+appender": os.getpid(), "subscribers": subscribers.pid}
        for count in SUBSCRIBER_COUNTS:
            for _ in range(options.warmup):
                await throughput_run(daemon, http, subscribers, count, THROUGHPUT_EVENTS)
            meter = CpuMeter.start(pids)
            samples = [
                await throughput_run(daemon, http, subscribers, count, THROUGHPUT_EVENTS)
                for _ in range(runs)
            ]
            # µs of CPU per frame delivered (one event to one subscriber).
            cpu = meter.per_op_ms(runs * THROUGHPUT_EVENTS * count)
            figure = Figure(
                f"(3) SSE delivery, {count} subscriber{'s' if count > 1 else ''}",
                tuple(s.events_per_s for s in samples),
                unit="events/s",
            )
            figures.append(figure)
            append = sorted(s.append_ms for s in samples)[len(samples) // 2]
            notes.append(
                f"(3) {count} subscriber(s): {figure.summary.median * count:,.0f} frames/s "
                f"delivered in all (median); the appends alone took {append:.0f} ms of each run; "
                f"CPU per delivered frame (µs): "
                + ", ".join(f"{name} {ms * 1000:.0f}" for name, ms in cpu.items())
                + f"; {sum(s.warnings for s in samples)} slow_client_warning frames."
            )

        session_id, _ = await create_session(http)
        await fill_session(daemon.journal, session_id, REPLAY_EVENTS)

        async def replay() -> float:
            await subscribers.ask({"replay": session_id, "events": REPLAY_EVENTS})
            return float((await subscribers.answer())["ms"])

        replays = await sample(replay, runs=runs, warmup=options.warmup)
        figures.append(
            Figure(f"(4) replay {REPLAY_EVENTS} events → replay_complete", replays).with_target(
                REPLAY_TARGET
            )
        )
        parts = [await replay_breakdown(daemon.journal, session_id) for _ in range(BREAKDOWN_RUNS)]
    notes[0:0] = [
        f"(3) {THROUGHPUT_EVENTS} events per run appended through the API's journal "
        f"(aappend_many, {APPEND_BATCH} a transaction, back to back, waking its subscribers "
        "at once); the subscribers read in a process of their own (bench.subscriber), each "
        "on its own HTTP connection, default maxQueued (256); a fresh session per run; "
        f"{runs} runs; higher is better.",
    ]
    notes.append(
        f"(4) {runs} runs, read by the subscriber process; the replay's parts timed apart in "
        f"this process (median of {BREAKDOWN_RUNS}): SQLite reads of the {REPLAY_EVENTS} "
        f"events in pages of {REPLAY_PAGE} {_median(p.db_read_ms for p in parts):.0f} ms, "
        f"frame encoding (envelope + JSON) {_median(p.encode_ms for p in parts):.0f} ms, "
        f"splitting the {parts[0].body_bytes / 1e6:.1f} MB body into frames "
        f"{_median(p.client_split_ms for p in parts):.0f} ms."
    )
    return Part(tuple(figures), tuple(notes))


def _median(values: Iterable[float]) -> float:
    return median(list(values))


async def _in_process(options: BenchOptions, *, session: bool, sse: bool) -> Part:
    started = time.perf_counter()
    env = await start_dev_server(TUNED_DEV_SERVER_ARGS)
    startup_ms = elapsed_ms(started)
    figures: list[Figure] = []
    notes: list[str] = []
    async with env:
        await ensure_search_attributes(env.client)
        with tempfile.TemporaryDirectory(prefix="agentrt-bench-sessions-") as tmp:
            if session:
                baseline = await measure_substrate(env, options.runs, options.warmup)
                async with live_daemon(env.client, Path(tmp) / "session") as daemon:
                    part = await measure_session_figures(env.client, daemon, baseline, options)
                figures += part.figures
                notes += part.notes
            if sse:
                async with live_daemon(env.client, Path(tmp) / "sse") as daemon:
                    part = await measure_sse_figures(daemon, options)
                figures += part.figures
                notes += part.notes
    notes.append(
        f"Dev server {temporal_cli_path()} (in-memory, {' '.join(TUNED_DEV_SERVER_ARGS)} as "
        f"embedded) started in {startup_ms:.0f} ms. The API (uvicorn, h11, real HTTP on "
        "loopback), the substrate probe (with its own worker) and the HTTP client of (1), (2) "
        "share this process and its event loop; the daemon's worker (`agentrt worker`, "
        "scripted model) runs in its own process, as under `agentrt up`; temp SQLite store."
    )
    return Part(tuple(figures), tuple(notes))


def _runs(options: BenchOptions, *, heavy: bool) -> str:
    text = f" ({options.runs} runs, {options.warmup} warm-up"
    return text + (f"; (3), (4): {heavy_runs(options.runs)} runs)" if heavy else ")")


def _report(title: str, parts: Sequence[Part]) -> Report:
    return Report(
        title=title,
        figures=tuple(figure for part in parts for figure in part.figures),
        notes=(*(note for part in parts for note in part.notes), machine_facts()),
    )


async def benchmark_session(options: BenchOptions) -> Report:
    """(1) and (2): session create and prompt round trip."""
    part = await _in_process(options, session=True, sse=False)
    return _report("Session daemon: create and prompt" + _runs(options, heavy=False), [part])


async def benchmark_sse(options: BenchOptions) -> Report:
    """(3) and (4): SSE delivery throughput and replay."""
    part = await _in_process(options, session=False, sse=True)
    title = "Session daemon: SSE delivery and replay" + _runs(options, heavy=True)
    return _report(title, [part])


async def benchmark_rss(options: BenchOptions) -> Report:
    """(5): RSS of a real `agentrt up` with 0, 1, 10 and 100 live sessions."""
    part = await rss.measure()
    return _report("Session daemon: memory of `agentrt up`", [part])


async def benchmark(options: BenchOptions) -> Report:
    """All of them: (1)–(4) in process, then (5) on a real `agentrt up`."""
    in_process = await _in_process(options, session=True, sse=True)
    memory = await rss.measure()
    return _report("Session daemon" + _runs(options, heavy=True), [in_process, memory])
