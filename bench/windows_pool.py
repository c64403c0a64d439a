"""The Windows lane: 500 concurrent holders leasing, calling and releasing against the
loopback pool (tests/fakes/windows_pool.py, a real HTTP server), through the real
WindowsLeaseWorkflow and pool activities on a dev server, worker in this process.

(a) one desktop verb sent straight to the pool over HTTP (the floor);
(b) the same verb through a held lease (update → activity → pool) — quoted against (a):
    (b) − (a) is the lease overhead per verb;
(c) a holder's first verb: the lease workflow started, a pool session opened, the verb;
(d) windows_release of a held lease (the pool session closed, the workflow ended);
(e) N holders at once (default 500, `--agents`): each leases with a first verb, calls a
    second, releases; the figure is each holder's three calls end to end, and the notes
    give the throughput (holders/s, verbs/s).
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.report import BenchOptions, Figure, Report, elapsed_ms, sample
from bench.substrate import TUNED_DEV_SERVER_ARGS, start_dev_server
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from runtime.temporal import ensure_search_attributes
from runtime.windows import lease_client
from runtime.windows.verbs import WindowsVerb
from tests.fakes.windows_pool import FakeWindowsPool
from worker import build_worker

DEFAULT_HOLDERS = 500
POOL_TOKEN = "bench-pool-token"
TENANT = "bench"


async def benchmark(options: BenchOptions) -> Report:
    runs, warmup = options.runs, options.warmup
    holders = options.agents or DEFAULT_HOLDERS
    ids = itertools.count()
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeWindowsPool(token=POOL_TOKEN, capacity=holders + 100) as pool,
    ):
        settings = Settings(
            data_dir=Path(tmp),
            workspace=Path(tmp),
            task_queue=f"bench-windows-{uuid.uuid4().hex[:12]}",
            windows_pool_url=pool.base_url,
            windows_pool_token=POOL_TOKEN,
        )
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        env = await start_dev_server(TUNED_DEV_SERVER_ARGS)
        async with env, httpx.AsyncClient(base_url=pool.base_url) as http:
            await ensure_search_attributes(env.client)

            async def call(holder: str, verb: WindowsVerb, args: dict[str, Any]) -> Any:
                return await lease_client.call_verb(
                    env.client,
                    task_queue=settings.task_queue,
                    tenant=TENANT,
                    holder=holder,
                    verb=verb,
                    args=args,
                    lease_ms=settings.windows_lease_ms,
                    idle_ms=settings.windows_lease_idle_ms,
                    wait_ms=60_000,
                    result_wait_s=120,
                )

            async with build_worker(env.client, settings, store):
                auth = {"Authorization": f"Bearer {POOL_TOKEN}"}
                opened = await http.post(
                    "/v1/sessions",
                    json={"tenant": TENANT, "holder": "direct", "leaseMs": 300_000},
                    headers=auth,
                )
                direct_sid = opened.json()["sessionId"]

                async def direct() -> float:
                    started = time.perf_counter()
                    answer = await http.post(
                        f"/v1/sessions/{direct_sid}/desktop/windows", json={}, headers=auth
                    )
                    answer.raise_for_status()
                    return elapsed_ms(started)

                direct_ms = await sample(direct, runs=runs, warmup=warmup)
                held = "held-holder"
                await call(held, WindowsVerb.WINDOWS, {})

                async def through_lease() -> float:
                    started = time.perf_counter()
                    await call(held, WindowsVerb.WINDOWS, {})
                    return elapsed_ms(started)

                lease_ms = await sample(through_lease, runs=runs, warmup=warmup)

                async def first_then_release() -> tuple[float, float]:
                    holder = f"h-{next(ids)}"
                    started = time.perf_counter()
                    await call(holder, WindowsVerb.WINDOWS, {})
                    first = elapsed_ms(started)
                    started = time.perf_counter()
                    released = await call(holder, WindowsVerb.RELEASE, {})
                    if released.get("released") is not True:
                        raise RuntimeError(f"release of {holder} answered {released}")
                    return first, elapsed_ms(started)

                pairs = [await first_then_release() for _ in range(warmup + runs)][warmup:]
                await call(held, WindowsVerb.RELEASE, {})

                async def one_holder(n: int) -> float:
                    holder = f"c-{n}"
                    started = time.perf_counter()
                    await call(holder, WindowsVerb.LAUNCH, {"program": "notepad.exe"})
                    await call(holder, WindowsVerb.WINDOWS, {})
                    await call(holder, WindowsVerb.RELEASE, {})
                    return elapsed_ms(started)

                started = time.perf_counter()
                concurrent = await asyncio.gather(*(one_holder(n) for n in range(holders)))
                wall_s = elapsed_ms(started) / 1000
                leftover = [h for h in pool.holders() if h != "direct"]
        store.dispose()
    a = Figure("(a) pool call, direct HTTP", direct_ms)
    b = Figure("(b) verb through a held lease", lease_ms).against(a)
    c = Figure("(c) first verb (lease + call)", tuple(p[0] for p in pairs)).against(b)
    d = Figure("(d) windows_release", tuple(p[1] for p in pairs))
    e = Figure(f"(e) {holders} holders at once: lease, call, release", tuple(concurrent))
    overhead = b.summary.median - a.summary.median
    return Report(
        title=f"Windows pool leases ({runs} runs, {warmup} warm-up; {holders} concurrent)",
        figures=(a, b, c, d, e),
        notes=(
            f"Lease overhead per verb (b − a, medians): {overhead:.2f} ms.",
            f"Leasing a machine on the first verb (c − b): "
            f"{c.summary.median - b.summary.median:.2f} ms.",
            f"{holders} concurrent holders in {wall_s:.2f} s: {holders / wall_s:.1f} holders/s, "
            f"{3 * holders / wall_s:.1f} verbs/s; pool sessions left held: {len(leftover)}.",
            "Loopback fake pool (tests/fakes/windows_pool.py); dev server with "
            "TUNED_DEV_SERVER_ARGS; one worker and the client in this process; temp SQLite.",
        ),
    )
