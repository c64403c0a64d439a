"""Agent-tools turn latency: one whole turn over HTTP, driven the way the page drives it.

Everything agentrt puts between a user and the substrate is in the loop: the API (security
chain, session, CSRF, rate guard) in process over ASGI, a real worker running TurnWorkflow
with its tool activities and journal local activities on a temp SQLite store with the demo
loaded, and the events feed read by its long poll. The Temporal primitives it is built from
are measured first, in the same process, on the same dev server (`measure_substrate`), and
both turn figures are quoted against "(d) update running 1 activity": a turn is a chain of
activities, so (d) is the substrate's nearest equivalent of one of its steps.

Per turn (each in a fresh browser session, so the rate guard of 60 mutations a minute and
session never trips; opening the session is not timed):

1. POST /turns → `agent.authorization.required` visible on GET /events (long poll);
2. untimed: POST /research/{id}/decision approve, then wait for the research.get_state call
   the decision's signal makes the turn run, so the resume does not race it;
3. POST /turns/{id}/resume → its 200 answer AND `agent.turn.completed` visible on /events.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from api.app import create_app
from bench.report import BenchOptions, Figure, Report, elapsed_ms
from bench.substrate import TUNED_DEV_SERVER_ARGS, measure_substrate, start_dev_server
from runtime.investigation.demo import ensure_demo
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from runtime.temporal import ensure_search_attributes, temporal_cli_path
from worker import build_worker

# The page's origin: the loopback daemon on its default port.
ORIGIN = "http://127.0.0.1:4170"
WORKSPACE = "demo"
PROMPT = "Who controls Kestrel Holdings and where did the Bluewater dredging money go?"
# The `wait` of GET /events: how long one long poll may park before it answers empty.
EVENTS_WAIT_S = 5
# A phase that has not finished after this long is a failure, not a slow sample.
PHASE_TIMEOUT_S = 60.0
DEFAULT_RUNS = 50

Event = dict[str, Any]


@dataclass(frozen=True)
class TurnSample:
    """One turn: its two timed phases, and what it did (for the context notes)."""

    to_authorization_ms: float
    resume_to_completed_ms: float
    tool_calls: tuple[str, ...]
    # Of those, the calls made inside each timed phase.
    calls_to_authorization: int
    calls_in_resume: int
    events: int


class _Page:
    """The browser page: session cookie, Origin and CSRF header, a cursor on the feed."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.csrf = ""
        self.cursor = 0

    async def open_session(self) -> None:
        """A new session (cookie and CSRF token), as a fresh page load gets."""
        self.http.cookies.clear()
        response = await self.http.get("/api/v1/agent-tools/session")
        _expect(response, 200)
        body: dict[str, Any] = response.json()
        self.csrf = str(body["csrfToken"])

    async def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post(
            path, json=body, headers={"Origin": ORIGIN, "X-CSRF-Token": self.csrf}
        )

    async def wait_for(
        self, turn_id: str, seen: list[Event], until: Callable[[Event], bool]
    ) -> None:
        """Long-poll the feed from the cursor, appending the turn's events to `seen`, until
        one of them satisfies `until`."""
        async with asyncio.timeout(PHASE_TIMEOUT_S):
            while True:
                response = await self.http.get(
                    "/api/v1/agent-tools/events",
                    params={
                        "cursor": self.cursor,
                        "wait": EVENTS_WAIT_S,
                        "limit": 500,
                        "workspace": WORKSPACE,
                    },
                )
                _expect(response, 200)
                page: dict[str, Any] = response.json()
                if page["cursor_expired"]:
                    raise RuntimeError(f"events after {self.cursor} were pruned before read")
                self.cursor = int(page["cursor"])
                events: list[Event] = [e for e in page["events"] if e["turn_id"] == turn_id]
                seen += events
                if any(until(event) for event in events):
                    return


def _expect(response: httpx.Response, status: int) -> None:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path} answered "
            f"{response.status_code}, expected {status}: {response.text[:500]}"
        )


def _calls(events: list[Event]) -> int:
    return sum(1 for e in events if e["type"] == "agent.tool.requested")


def _is(event_type: str, tool_id: str | None = None) -> Callable[[Event], bool]:
    def match(event: Event) -> bool:
        if event["type"] != event_type:
            return False
        return tool_id is None or event["payload"].get("tool_id") == tool_id

    return match


async def run_turn(page: _Page) -> TurnSample:
    await page.open_session()
    seen: list[Event] = []

    started = time.perf_counter()
    response = await page.post("/api/v1/agent-tools/turns", {"prompt": PROMPT})
    _expect(response, 202)
    turn: dict[str, Any] = response.json()
    turn_id = str(turn["turn_id"])
    # Every event of this turn comes after the cursor the answer names.
    page.cursor = int(turn["events_cursor"])
    await page.wait_for(turn_id, seen, _is("agent.authorization.required"))
    to_authorization = elapsed_ms(started)
    calls_to_authorization = _calls(seen)

    research_id = str(
        next(e for e in seen if e["type"] == "agent.authorization.required")["payload"][
            "research_id"
        ]
    )
    response = await page.post(
        f"/api/v1/research/{research_id}/decision",
        {"decision": "approve", "decided_by": "bench@agentrt", "note": "bench"},
    )
    _expect(response, 200)
    # The decision's signal wakes the turn, which re-reads the research's state (one
    # research.get_state call) and goes back to waiting for the resume.
    await page.wait_for(turn_id, seen, _is("agent.tool.completed", "research.get_state"))

    calls_before_resume = _calls(seen)
    started = time.perf_counter()
    response = await page.post(f"/api/v1/agent-tools/turns/{turn_id}/resume", {})
    _expect(response, 200)
    result: dict[str, Any] = response.json()
    if result.get("status") != "completed":
        raise RuntimeError(f"turn {turn_id} resumed into {result}")
    await page.wait_for(turn_id, seen, _is("agent.turn.completed"))
    resume_to_completed = elapsed_ms(started)

    tool_calls = tuple(
        str(e["payload"]["tool_id"]) for e in seen if e["type"] == "agent.tool.requested"
    )
    return TurnSample(
        to_authorization_ms=to_authorization,
        resume_to_completed_ms=resume_to_completed,
        tool_calls=tool_calls,
        calls_to_authorization=calls_to_authorization,
        calls_in_resume=len(tool_calls) - calls_before_resume,
        events=len(seen),
    )


def _settings(root: Path) -> Settings:
    """Explicit on everything the caller's environment could otherwise change."""
    return Settings(
        hostname="127.0.0.1",
        port=4170,
        token=None,
        require_auth=False,
        rate_limit=False,
        workspace=root,
        data_dir=root / ".data",
        database_url=f"sqlite:///{root / '.data' / 'agentrt.db'}",
        task_queue=f"bench-turn-{uuid.uuid4().hex[:12]}",
        agent_tools_workspace=WORKSPACE,
        model_provider="scripted",
    )


async def measure_turns(client: Client, root: Path, options: BenchOptions) -> list[TurnSample]:
    """`warmup` + `runs` turns against an in-process API and worker; keeps the last `runs`."""
    settings = _settings(root)
    settings.resolved_data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(settings.resolved_database_url)
    try:
        await asyncio.to_thread(upgrade_to_head, store.engine)
        with store.transaction() as session:
            ensure_demo(session, WORKSPACE)
        app = create_app(settings, temporal_client=client)
        async with (
            build_worker(client, settings, store),
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http,
        ):
            page = _Page(http)
            for _ in range(options.warmup):
                await run_turn(page)
            return [await run_turn(page) for _ in range(options.runs)]
    finally:
        store.dispose()


def _spread(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}–{high} (varies!)"


def _per_call(figure: Figure, calls: list[int], reference: Figure) -> str:
    """A phase's median spread over its tool calls, against the reference's median."""
    n = min(calls)
    ms = figure.summary.median / n
    return f"{figure.name[:3]}: {ms:.1f} ms = {ms / reference.summary.median:.2f}× (d) over {n}"


def _context(samples: list[TurnSample], to_authorization: Figure, reference: Figure) -> list[str]:
    kinds = Counter(samples[0].tool_calls)
    breakdown = ", ".join(f"{tool}×{n}" if n > 1 else tool for tool, n in kinds.items())
    phase1 = [s.calls_to_authorization for s in samples]
    phase2 = [s.calls_in_resume for s in samples]
    total = [len(s.tool_calls) for s in samples]
    untimed = [n - a - b for n, a, b in zip(total, phase1, phase2, strict=True)]
    return [
        f"Tool calls per turn: {_spread(total)} ({breakdown}): {_spread(phase1)} in (1), "
        f"{_spread(phase2)} in (2), {_spread(untimed)} untimed after the approval; "
        "each an activity, plus a journal local activity per event batch.",
        f"Events per turn on /events: {_spread([s.events for s in samples])}.",
        f"Median per tool call in {_per_call(to_authorization, phase1, reference)} calls "
        "(API, journal events and long-poll included).",
    ]


async def benchmark(options: BenchOptions) -> Report:
    started = time.perf_counter()
    env = await start_dev_server(TUNED_DEV_SERVER_ARGS)
    startup_ms = elapsed_ms(started)
    async with env:
        await ensure_search_attributes(env.client)
        baseline = await measure_substrate(env, options.runs, options.warmup)
        with tempfile.TemporaryDirectory(prefix="agentrt-bench-turn-") as tmp:
            samples = await measure_turns(env.client, Path(tmp), options)
    reference = baseline.update_activity
    to_authorization = Figure(
        "(1) POST /turns → authorization.required on /events",
        tuple(s.to_authorization_ms for s in samples),
    ).against(reference)
    resume = Figure(
        "(2) resume → 200 + turn.completed on /events",
        tuple(s.resume_to_completed_ms for s in samples),
    ).against(reference)
    return Report(
        title=f"Agent-tools turn latency ({options.runs} turns, {options.warmup} warm-up)",
        figures=(to_authorization, resume, reference),
        notes=(
            "Ratios are of medians to the substrate's (d) update running 1 activity, measured "
            "first in this process on the same server: a turn is a chain of activities.",
            *_context(samples, to_authorization, reference),
            "Not timed: opening a fresh session per turn (keeps clear of the 60 mutations/min "
            "guard), the approval and the research.get_state call its signal triggers.",
            f"/events long-polls with wait={EVENTS_WAIT_S}; the worker writes the journal "
            "from its own connection, so the API sees new events on its 20 ms re-read.",
            f"Dev server {temporal_cli_path()} (in-memory, {' '.join(TUNED_DEV_SERVER_ARGS)} "
            f"as embedded) started in {startup_ms:.0f} ms; API (ASGI, in process), worker, "
            "substrate probe and client share this process; temp SQLite store, demo loaded.",
        ),
    )
