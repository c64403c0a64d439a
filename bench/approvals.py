"""From a request for a human to the webhook that tells someone (issue 22): the time from
an approval's request being recorded to its signed `approval.requested` delivery reaching
a receiver, and from an answer over HTTP to its `approval.resolved`.

A Temporal dev server (tuned as `agentrt up` runs it), the API under uvicorn in this
process and a worker process (bench/daemon.live_daemon), a temporary SQLite store, and a
receiver on loopback in this process that verifies each signature with `standardwebhooks`
(the clock both ends read is this process's). Each run raises one standing-agent decision
the way the agent's tool does (an attention request written to the store, which opens
its approval and owes the delivery in the same transaction; the API's waker wakes the
endpoint's workflow), then answers it through `POST .../respond`:

(a) request recorded → `approval.requested` received;
(b) the answer recorded (`POST .../respond` answered) → `approval.resolved` received;
(c) the respond route itself (its store write waits on the agent's tick for SQLite's one
    writer: the agent greets and ticks meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import uvicorn
from standardwebhooks.webhooks import Webhook
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.daemon import _Server, free_port, live_daemon
from bench.report import BenchOptions, Figure, Report, Target
from bench.substrate import TUNED_DEV_SERVER_ARGS, start_dev_server
from runtime.notifications import endpoints
from runtime.settings import Settings
from runtime.standing_agents.contracts import AttentionKind, AttentionStatus
from runtime.standing_agents.control import set_standing_agents
from runtime.standing_agents.models import AttentionRequest
from runtime.store import Store
from runtime.temporal import ensure_search_attributes

DEFAULT_RUNS: Final = 50
TARGET_MS: Final = 200.0
TENANT: Final = "bench-approvals"
TOKEN: Final = "bench-approvals-token"


class _Receiver:
    def __init__(self) -> None:
        self.secret = ""
        self.arrived: dict[tuple[str, str], float] = {}
        self.changed = asyncio.Event()

    async def handle(self, request: Request) -> Response:
        at = time.perf_counter()
        body = await request.body()
        event = Webhook(self.secret).verify(body, dict(request.headers))
        key = (str(event["type"]), str(event["data"]["approvalId"]))
        self.arrived.setdefault(key, at)
        self.changed.set()
        return Response(status_code=204)

    async def wait(self, key: tuple[str, str]) -> float:
        async with asyncio.timeout(30):
            while key not in self.arrived:
                self.changed.clear()
                await self.changed.wait()
        return self.arrived[key]


@contextlib.asynccontextmanager
async def _serve(receiver: _Receiver, port: int):  # type: ignore[no-untyped-def]
    app = Starlette(routes=[Route("/hook", receiver.handle, methods=["POST"])])
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield
    finally:
        server.should_exit = True
        await task


def _raise_decision(store: Store, soa: str) -> str:
    decision_id = uuid.uuid4().hex
    with store.session() as db:
        db.add(
            AttentionRequest(
                decision_id=decision_id,
                tenant=TENANT,
                kind=AttentionKind.DECISION.value,
                source="soa",
                soa_instance_id=soa,
                title="Ship it?",
                body="The agent asks.",
                options=["approve", "reject"],
                payload={},
                status=AttentionStatus.OPEN.value,
                created_at=datetime.now(UTC),
            )
        )
        db.commit()
    return decision_id


async def benchmark(options: BenchOptions) -> Report:
    runs, warmup = options.runs, options.warmup
    requested: list[float] = []
    resolved: list[float] = []
    responding: list[float] = []
    env = await start_dev_server(TUNED_DEV_SERVER_ARGS)
    try:
        await ensure_search_attributes(env.client)
        with tempfile.TemporaryDirectory(prefix="agentrt-bench-approvals-") as tmp:
            async with live_daemon(env.client, Path(tmp), TOKEN) as daemon:
                settings: Settings = daemon.settings
                store = Store(settings.resolved_database_url)
                receiver = _Receiver()
                port = free_port()
                async with _serve(receiver, port):
                    soa = (
                        await asyncio.to_thread(set_standing_agents, store, settings, TENANT, True)
                    )[0].instance_id
                    row = await asyncio.to_thread(
                        endpoints.create,
                        store,
                        f"http://127.0.0.1:{port}/hook",
                        ["approval.requested", "approval.resolved"],
                        None,
                        "bench",
                    )
                    receiver.secret = row.secret
                    async with daemon.client() as http:
                        for run in range(warmup + runs):
                            start = time.perf_counter()
                            decision = _raise_decision(store, soa)
                            approval = f"decision:{decision}"
                            asked = await receiver.wait(("approval.requested", approval))
                            sent = time.perf_counter()
                            answer = await http.post(
                                f"/api/v1/tenants/{TENANT}/decisions/{decision}/respond",
                                json={"resolution": "approve"},
                            )
                            answer.raise_for_status()
                            answered = time.perf_counter()
                            done = await receiver.wait(("approval.resolved", approval))
                            if run >= warmup:
                                requested.append((asked - start) * 1000)
                                resolved.append((done - answered) * 1000)
                                responding.append((answered - sent) * 1000)
                store.dispose()
    finally:
        await env.shutdown()
    a = Figure("(a) request recorded → approval.requested received", tuple(requested))
    a = a.with_target(Target(TARGET_MS, reference="issue 22: under 200 ms"))
    b = Figure("(b) answer recorded (respond answered) → approval.resolved", tuple(resolved))
    c = Figure("(c) POST .../respond itself", tuple(responding))
    median = a.summary.median
    verdict = "met" if median <= TARGET_MS else "MISSED"
    return Report(
        title=f"Approvals to webhooks ({runs} runs, {warmup} warm-up)",
        figures=(a, b, c),
        notes=(
            f"Target: (a) under {TARGET_MS:g} ms (median): {median:.1f} ms, {verdict}.",
            "Each delivery is signed and verified (standardwebhooks); one endpoint, one "
            "subject; the endpoint's workflow is woken by the API's waker.",
        ),
    )
