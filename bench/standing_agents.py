"""Standing agents at scale (issue 10): N idle agents on one worker, then a heartbeat storm.

A real `agentrt up` (API, one worker, the embedded dev server, SQLite), run as a user runs
it, with a bearer token (agent changes need one) and the scripted model:

1. start: N tenants enabled (PUT …/features/standing-agents), each bootstrapping its SOA
   (Active, seeded with AgentInitialized), `--concurrency` requests at a time; timed from
   the first request until every agent's first tick (the greeting) is in the ledger, its
   lease released and its next heartbeat (24 h) queued;
2. memory: VmRSS of the worker with N idle agents (API and Temporal apart), read a few times;
3. idle: the worker's CPU over a few windows while every agent waits for its heartbeat, and
   the model calls and ledger turns recorded meanwhile (target: none of either);
4. heartbeat storm: the queued heartbeats of `--storm` agents made due at once (their
   `visible_at` moved to now in the store, as if their 24 h had passed together), each
   workflow woken by its `wake` signal as its timer would; timed until every one of those
   ticks is in the ledger. Twice: the first heartbeat after the greeting plans (its input
   hash differs from the greeting's), the second is idle (same hash: no model call);
5. one tenant at its cap: the ticks per second of one tenant's agents, all given an event
   at once, with at most `MaxConcurrentInstancesPerTenant` (4) ticking;
6. overshoot: the spend of such a burst against the tenant's weekly credit, set to cover
   three and a half ticks (bench/standing_agents_cap.py).

The agent count is `--agents` (default 10,000); a smoke run with 50 takes well under a
minute. `--runs` and `--warmup` do not apply: each figure's samples are its reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from secrets import token_urlsafe

import httpx
from sqlalchemy import func, update
from sqlmodel import col, select
from temporalio.client import Client

from bench.client import expect, wait_worker_polling
from bench.daemon import child_env, free_port, spawn, stop
from bench.llm_provider import GOOD_KEY, SERVED_MODEL, LoopbackProvider
from bench.machine import machine_facts
from bench.procs import cpu_seconds
from bench.report import BenchOptions, Figure, Report, Target, elapsed_ms
from bench.rss import Tree
from bench.standing_agents_cap import (
    PRICE,
    TICKS_COVERED,
    CapRound,
    OvershootRound,
    cap_round,
    overshoot_round,
    set_price,
    tenant_agents,
)
from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.contracts import (
    STANDING_AGENTS_FEATURE,
    EventKind,
    agent_workflow_id,
)
from runtime.standing_agents.models import AgentEventRow, AgentInstance, AgentLedgerTurn
from runtime.store import Store

DEFAULT_AGENTS = 10_000
DEFAULT_STORM = 1_000
DEFAULT_CONCURRENCY = 32
# Idle CPU: this many windows of this many seconds.
IDLE_WINDOWS = 6
IDLE_WINDOW_S = 10.0
RSS_READS = 10
RSS_READ_INTERVAL_S = 0.2
# After the last agent is idle, before anything is read: workflow tasks still in flight
# (each agent's next_event after its tick), the journal's writes, the garbage collector.
SETTLE_S = 5.0
POLL_S = 0.5
PROGRESS_S = 15.0
STOP_TIMEOUT_S = 120.0
# Generous bounds: a run that has not got there by then is reported as a failure.
START_TIMEOUT_PER_AGENT_S = 0.5
STORM_TIMEOUT_PER_AGENT_S = 0.3
MIN_TIMEOUT_S = 120.0
SIGNAL_CONCURRENCY = 64
# The tenant phases (bench/standing_agents_cap.py): agents of one tenant, its cap, rounds.
TENANT_AGENTS = 16
TENANT_CAP = 4
CAP_ROUNDS = 3
OVERSHOOT_ROUNDS = 2
BENCH_PROVIDER = "bench"
KEY_ENV = "BENCH_LLM_API_KEY"

IDLE_CPU_TARGET = Target(1.0, reference="issue 10: no CPU between heartbeats")
NO_CALLS_TARGET = Target(0, reference="issue 10: no LLM call between heartbeats")
IDLE_STORM_CALLS_TARGET = Target(0, reference="§3.4: an idle tick calls no model")
CAP_TARGET = Target(TENANT_CAP, reference="§3.2 MaxConcurrentInstancesPerTenant")
OVERSHOOT_TARGET = Target(0, reference="issue 21, item 8: reserve before you spend")


@dataclass(frozen=True)
class Scale:
    agents: int = DEFAULT_AGENTS
    storm: int = DEFAULT_STORM
    concurrency: int = DEFAULT_CONCURRENCY
    idle_windows: int = IDLE_WINDOWS
    idle_window_s: float = IDLE_WINDOW_S
    tenant_agents: int = TENANT_AGENTS
    cap_rounds: int = CAP_ROUNDS
    overshoot_rounds: int = OVERSHOOT_ROUNDS

    def timeout(self, per_agent_s: float, agents: int) -> float:
        return max(MIN_TIMEOUT_S, per_agent_s * agents)


def log(message: str) -> None:
    """Progress on stderr: a full run takes minutes; the report goes to stdout."""
    print(f"[standing-agents {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- agentrt up ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Up:
    pid: int
    api_url: str
    temporal_address: str
    root: Path
    log: Path

    @property
    def database_url(self) -> str:
        return f"sqlite:///{self.root / '.data' / 'agentrt.db'}"


def _spawn_up(root: Path, token: str) -> tuple[Up, Callable[[], bool], Callable[[], None]]:
    api, frontend, ui = free_port(), free_port(), free_port()
    env = child_env(
        {
            "AGENTRT_PORT": str(api),
            "AGENTRT_TEMPORAL_PORT": str(frontend),
            "AGENTRT_TEMPORAL_UI_PORT": str(ui),
            "AGENTRT_TOKEN": token,
            "AGENTRT_MODEL_PROVIDER": "scripted",
            # The defaults, said out loud: an idle agent's next heartbeat is a day away.
            "AGENTRT_AGENT_HEARTBEAT_MS": "86400000",
            "AGENTRT_AGENT_IDLE_HEARTBEAT_ENABLED": "true",
            "AGENTRT_STANDING_AGENTS_AUTO_BOOTSTRAP": "true",
            "AGENTRT_STANDING_AGENTS_IDLE_BY_DEFAULT": "true",
            "AGENTRT_MAX_CONCURRENT_INSTANCES_PER_TENANT": str(TENANT_CAP),
            # The key of the loopback model the overshoot phase binds (apiKeyEnv).
            KEY_ENV: GOOD_KEY,
        }
    )
    log_file = root / "up.log"
    args = [sys.executable, "-m", "cli", "up", "--workspace", str(root)]
    process = spawn(args, env, log_file, root)
    up = Up(
        pid=process.pid,
        api_url=f"http://127.0.0.1:{api}",
        temporal_address=f"127.0.0.1:{frontend}",
        root=root,
        log=log_file,
    )
    return up, lambda: process.poll() is None, lambda: stop(process, STOP_TIMEOUT_S)


# -- the store, read (and the storm's one write) ------------------------------------------------


def _count_attempts(store: Store) -> int:
    with store.session() as db:
        return int(db.exec(select(func.count()).select_from(LlmCallAttempt)).one())


def _count_turns(store: Store, kind: EventKind | None = None, ids: Sequence[str] = ()) -> int:
    query = select(func.count()).select_from(AgentLedgerTurn)
    if kind is not None:
        query = query.where(col(AgentLedgerTurn.event_kind) == kind.value)
    if ids:
        query = query.where(col(AgentLedgerTurn.instance_id).in_(ids))
    with store.session() as db:
        return int(db.exec(query).one())


@dataclass(frozen=True)
class Progress:
    greeted: int  # agents with their AgentInitialized turn in the ledger
    ticking: int  # agents holding the tick lease
    waiting: int  # agents with their next heartbeat queued

    def idle(self, agents: int) -> bool:
        return self.greeted == agents and self.ticking == 0 and self.waiting == agents


def _progress(store: Store) -> Progress:
    with store.session() as db:
        greeted = db.exec(
            select(func.count(func.distinct(AgentLedgerTurn.instance_id))).where(
                col(AgentLedgerTurn.event_kind) == EventKind.AGENT_INITIALIZED.value
            )
        ).one()
        ticking = db.exec(
            select(func.count())
            .select_from(AgentInstance)
            .where(col(AgentInstance.tick_in_progress).is_(True))
        ).one()
        waiting = db.exec(
            select(func.count(func.distinct(AgentEventRow.instance_id))).where(
                col(AgentEventRow.event_kind) == EventKind.AGENT_TICK.value,
                col(AgentEventRow.consumed_at).is_(None),
            )
        ).one()
    return Progress(int(greeted), int(ticking), int(waiting))


def _agents(store: Store) -> list[tuple[str, str]]:
    """(tenant, instance id) of every agent, in a stable order."""
    with store.session() as db:
        rows = db.exec(
            select(AgentInstance.tenant, AgentInstance.instance_id).order_by(
                col(AgentInstance.tenant), col(AgentInstance.instance_id)
            )
        ).all()
    return [(str(tenant), str(instance)) for tenant, instance in rows]


def _make_due(store: Store, ids: Sequence[str], now: datetime) -> int:
    """Move the queued heartbeat of each agent in `ids` to `now`: as if they fell due together.

    Returns how many heartbeats were moved (one per agent when every agent is idle).
    """
    with store.session() as db:
        moved = db.exec(
            update(AgentEventRow)
            .where(
                col(AgentEventRow.instance_id).in_(ids),
                col(AgentEventRow.event_kind) == EventKind.AGENT_TICK.value,
                col(AgentEventRow.consumed_at).is_(None),
            )
            .values(visible_at=now)
        ).rowcount
        db.exec(
            update(AgentInstance)
            .where(col(AgentInstance.instance_id).in_(ids))
            .values(next_tick_at=now)
        )
        db.commit()
    return int(moved)


async def _until(
    check: Callable[[], Awaitable[bool]], timeout: float, what: Callable[[], Awaitable[str]]
) -> None:
    deadline = time.monotonic() + timeout
    next_log = time.monotonic() + PROGRESS_S
    while not await check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {await what()}")
        if time.monotonic() > next_log:
            log(await what())
            next_log = time.monotonic() + PROGRESS_S
        await asyncio.sleep(POLL_S)


# -- phases ---------------------------------------------------------------------------------


async def _bounded(
    items: Iterable[str], concurrency: int, action: Callable[[str], Awaitable[float]]
) -> list[float]:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(item: str) -> float:
        async with semaphore:
            return await action(item)

    return list(await asyncio.gather(*(one(item) for item in items)))


@dataclass(frozen=True)
class Start:
    enable_ms: tuple[float, ...]
    requests_s: float  # first PUT → last PUT answered
    all_idle_s: float  # first PUT → every agent greeted, idle, heartbeat queued


async def start_agents(http: httpx.AsyncClient, store: Store, scale: Scale, run: str) -> Start:
    async def enable(tenant: str) -> float:
        started = time.perf_counter()
        response = await http.put(
            f"/api/v1/tenants/{tenant}/features/{STANDING_AGENTS_FEATURE}",
            json={"enabled": True},
        )
        duration = elapsed_ms(started)
        expect(response, 200)
        return duration

    tenants = [f"bench-{run}-{index:05d}" for index in range(scale.agents)]
    log(f"enabling {scale.agents} tenants ({scale.concurrency} at a time)")
    started = time.perf_counter()
    latencies = await _bounded(tenants, scale.concurrency, enable)
    requests_s = elapsed_ms(started) / 1000
    log(f"{scale.agents} tenants enabled in {requests_s:.1f} s; waiting for every greeting")

    async def idle() -> bool:
        return (await asyncio.to_thread(_progress, store)).idle(scale.agents)

    async def what() -> str:
        progress = await asyncio.to_thread(_progress, store)
        return (
            f"{progress.greeted}/{scale.agents} greeted, {progress.ticking} ticking, "
            f"{progress.waiting} waiting for their heartbeat"
        )

    await _until(idle, scale.timeout(START_TIMEOUT_PER_AGENT_S, scale.agents), what)
    return Start(tuple(latencies), requests_s, elapsed_ms(started) / 1000)


@dataclass(frozen=True)
class Idle:
    cpu_percent: tuple[float, ...]  # of one core, per window
    model_calls: int
    turns: int


async def measure_idle(store: Store, tree: Tree, scale: Scale) -> Idle:
    pids = tree.pids["worker"]
    calls = await asyncio.to_thread(_count_attempts, store)
    turns = await asyncio.to_thread(_count_turns, store)
    samples = []
    for window in range(scale.idle_windows):
        before = sum(map(cpu_seconds, pids))
        started = time.perf_counter()
        await asyncio.sleep(scale.idle_window_s)
        used = sum(map(cpu_seconds, pids)) - before
        samples.append(used / (time.perf_counter() - started) * 100)
        log(f"idle window {window + 1}/{scale.idle_windows}: worker CPU {samples[-1]:.2f} %")
    return Idle(
        tuple(samples),
        await asyncio.to_thread(_count_attempts, store) - calls,
        await asyncio.to_thread(_count_turns, store) - turns,
    )


@dataclass(frozen=True)
class Storm:
    label: str
    agents: int
    signals_s: float  # sending every wake signal
    ticks_s: float  # first signal → every tick in the ledger
    model_calls: int
    worker_cpu_s: float

    @property
    def ticks_per_s(self) -> float:
        return self.agents / self.ticks_s


async def storm(
    client: Client,
    store: Store,
    tree: Tree,
    agents: Sequence[tuple[str, str]],
    scale: Scale,
    label: str,
) -> Storm:
    ids = [instance for _, instance in agents]
    before_turns = await asyncio.to_thread(_count_turns, store, EventKind.AGENT_TICK, ids)
    before_calls = await asyncio.to_thread(_count_attempts, store)
    moved = await asyncio.to_thread(_make_due, store, ids, datetime.now(UTC))
    if moved != len(ids):
        raise RuntimeError(f"{len(ids)} agents should each have one queued heartbeat: {moved}")
    workers = tree.pids["worker"]
    cpu_before = sum(map(cpu_seconds, workers))

    async def wake(key: str) -> float:
        tenant, instance = key.split("\0")
        await client.get_workflow_handle(agent_workflow_id(tenant, instance)).signal("wake")
        return 0.0

    log(f"storm ({label}): {len(ids)} heartbeats due; waking their workflows")
    started = time.perf_counter()
    await _bounded([f"{t}\0{i}" for t, i in agents], SIGNAL_CONCURRENCY, wake)
    signals_s = elapsed_ms(started) / 1000
    wanted = before_turns + len(ids)

    async def done() -> bool:
        turns = await asyncio.to_thread(_count_turns, store, EventKind.AGENT_TICK, ids)
        return turns >= wanted

    async def what() -> str:
        turns = await asyncio.to_thread(_count_turns, store, EventKind.AGENT_TICK, ids)
        return f"storm ({label}): {turns - before_turns}/{len(ids)} heartbeat ticks recorded"

    await _until(done, scale.timeout(STORM_TIMEOUT_PER_AGENT_S, len(ids)), what)
    ticks_s = elapsed_ms(started) / 1000
    cpu = sum(map(cpu_seconds, workers)) - cpu_before
    calls = await asyncio.to_thread(_count_attempts, store) - before_calls
    log(f"storm ({label}): {len(ids)} ticks in {ticks_s:.1f} s, {calls} model calls")
    # Back to idle (leases released, next heartbeats queued) before anything else runs.
    all_agents = len(await asyncio.to_thread(_agents, store))

    async def idle() -> bool:
        return (await asyncio.to_thread(_progress, store)).idle(all_agents)

    await _until(idle, MIN_TIMEOUT_S, what)
    return Storm(label, len(ids), signals_s, ticks_s, calls, cpu)


# -- the run --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    scale: Scale
    startup_s: float
    start: Start
    baseline_rss: dict[str, tuple[float, ...]]  # by role, MB, before any agent
    idle_rss: dict[str, tuple[float, ...]]
    idle: Idle
    storms: tuple[Storm, ...]
    caps: tuple[CapRound, ...]
    overshoots: tuple[OvershootRound, ...]
    pids: dict[str, tuple[int, ...]]


async def _rss(tree: Tree) -> dict[str, tuple[float, ...]]:
    reads = []
    for _ in range(RSS_READS):
        reads.append(tree.memory())
        await asyncio.sleep(RSS_READ_INTERVAL_S)
    return {role: tuple(read[role].rss / 1e6 for read in reads) for role in tree.pids}


async def run(scale: Scale, root: Path) -> Run:
    token = token_urlsafe(24)
    started = time.perf_counter()
    resources = contextlib.ExitStack()
    provider = resources.enter_context(LoopbackProvider())
    up, alive, shutdown = await asyncio.to_thread(_spawn_up, root, token)
    store: Store | None = None
    try:
        headers = {"Authorization": f"Bearer {token}"}
        limits = httpx.Limits(max_connections=scale.concurrency)
        async with httpx.AsyncClient(
            base_url=up.api_url, headers=headers, timeout=120, limits=limits
        ) as http:
            await wait_worker_polling(http, alive, up.log)
            startup_s = elapsed_ms(started) / 1000
            tree = await asyncio.to_thread(Tree.of, up.pid)
            store = Store(up.database_url)
            await asyncio.sleep(SETTLE_S)
            baseline = await _rss(tree)
            start = await start_agents(http, store, scale, token_urlsafe(4).lower())
            log(f"{scale.agents} agents idle after {start.all_idle_s:.1f} s; settling")
            await asyncio.sleep(SETTLE_S)
            idle_rss = await _rss(tree)
            idle = await measure_idle(store, tree, scale)
            agents = (await asyncio.to_thread(_agents, store))[: scale.storm]
            client = await Client.connect(up.temporal_address)
            storms = (
                await storm(client, store, tree, agents, scale, "first heartbeat"),
                await storm(client, store, tree, agents, scale, "second heartbeat"),
            )
            caps = await cap_phase(http, store, scale)
            overshoots = await overshoot_phase(http, store, scale, provider)
            if await asyncio.to_thread(Tree.of, up.pid) != tree:
                raise RuntimeError("a child of agentrt up was restarted during the run")
    finally:
        if store is not None:
            store.dispose()
        await asyncio.to_thread(shutdown)
        resources.close()
    return Run(
        scale,
        startup_s,
        start,
        baseline,
        idle_rss,
        idle,
        storms,
        caps,
        overshoots,
        {role: tuple(pids) for role, pids in tree.pids.items()},
    )


async def cap_phase(http: httpx.AsyncClient, store: Store, scale: Scale) -> tuple[CapRound, ...]:
    """One tenant's agents at its cap (bench/standing_agents_cap.py)."""
    tenant = f"bench-cap-{token_urlsafe(4).lower().replace('_', 'x').replace('-', 'x')}"
    log(f"cap: {scale.tenant_agents} agents of one tenant, at most {TENANT_CAP} ticking")
    ids = await tenant_agents(http, store, tenant, scale.tenant_agents)
    caps = []
    for index in range(scale.cap_rounds):
        caps.append(await cap_round(http, store, tenant, ids, f"cap{index}"))
        each = caps[-1]
        log(f"cap round {index + 1}: {each.ticks_per_s:.1f} ticks/s, {each.max_ticking} at once")
    return tuple(caps)


async def overshoot_phase(
    http: httpx.AsyncClient, store: Store, scale: Scale, provider: LoopbackProvider
) -> tuple[OvershootRound, ...]:
    """Bursts against a weekly credit (bench/standing_agents_cap.py), last: the agents'
    model is rebound (`Agent:Default`) to a priced OpenAI-compatible endpoint on loopback,
    since the built-in scripted model is free and reserves nothing."""
    await bind_priced_model(http, provider.base_url)
    rounds: list[OvershootRound] = []
    for index in range(scale.overshoot_rounds):
        tenant = f"bench-credit-{token_urlsafe(4).lower().replace('_', 'x').replace('-', 'x')}"
        ids = await tenant_agents(http, store, tenant, scale.tenant_agents)
        rounds.append(await overshoot_round(http, store, tenant, ids))
        each = rounds[-1]
        log(
            f"overshoot round {index + 1}: credit ${each.credit_usd:.4f}, spent "
            f"${each.spent_usd:.4f}, {each.answered} answered, {each.paused} paused"
        )
    return tuple(rounds)


async def bind_priced_model(http: httpx.AsyncClient, base_url: str) -> None:
    """Bind every standing agent's planning (`Agent:Default`) to the loopback endpoint at
    `base_url` (bench/llm_provider.py), read with the key in KEY_ENV, at PRICE."""
    llm = "/api/v1/llm"
    body = {"baseUrl": base_url, "credentials": [{"alias": "main", "apiKeyEnv": KEY_ENV}]}
    expect(await http.put(f"{llm}/providers/{BENCH_PROVIDER}", json=body), 200)
    preset = {"model": SERVED_MODEL, "provider": BENCH_PROVIDER}
    expect(await http.put(f"{llm}/presets/{BENCH_PROVIDER}", json=preset), 200)
    binding = {"presetId": BENCH_PROVIDER}
    expect(await http.put(f"{llm}/sites/Agent:Default/preset", json=binding), 200)
    await set_price(http, SERVED_MODEL, PRICE)


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def report(result: Run) -> Report:
    scale = result.scale
    n = scale.agents
    start = result.start
    worker_idle = result.idle_rss["worker"]
    per_agent_kb = (_median(worker_idle) - _median(result.baseline_rss["worker"])) * 1000 / n
    figures: list[Figure] = [
        Figure(f"enable a tenant (PUT, SOA bootstrapped), {n} tenants", start.enable_ms),
        Figure(
            f"start {n} agents: first PUT → all greeted and idle", (start.all_idle_s,), unit="s"
        ),
        Figure("agents started per second", (n / start.all_idle_s,), unit="agents/s"),
        Figure("worker RSS, no agent", result.baseline_rss["worker"], unit="MB"),
        Figure(f"worker RSS, {n} idle agents", worker_idle, unit="MB"),
        Figure(f"API RSS, {n} idle agents", result.idle_rss["api"], unit="MB"),
        Figure(f"Temporal dev server RSS, {n} idle agents", result.idle_rss["temporal"], unit="MB"),
        Figure(
            f"worker CPU while {n} agents idle ({scale.idle_window_s:g} s windows)",
            result.idle.cpu_percent,
            unit="% core",
        ).with_target(IDLE_CPU_TARGET),
        Figure(
            "model calls while idle", (float(result.idle.model_calls),), unit="calls"
        ).with_target(NO_CALLS_TARGET),
    ]
    for each in result.storms:
        figures.append(
            Figure(
                f"heartbeat storm, {each.agents} due at once ({each.label})",
                (each.ticks_per_s,),
                unit="ticks/s",
            )
        )
    figures += _tenant_figures(result)
    idle_storm = result.storms[-1]
    figures.append(
        Figure(
            f"model calls in the storm ({idle_storm.label})",
            (float(idle_storm.model_calls),),
            unit="calls",
        ).with_target(IDLE_STORM_CALLS_TARGET)
    )
    storms = "; ".join(
        f"{each.label}: {each.agents} ticks in {each.ticks_s:.1f} s (wake signals sent in "
        f"{each.signals_s:.1f} s), {each.model_calls} model calls, worker CPU "
        f"{each.worker_cpu_s:.1f} s ({each.worker_cpu_s * 1000 / each.agents:.1f} ms a tick)"
        for each in result.storms
    )
    pids = ", ".join(f"{role} {'/'.join(map(str, pids))}" for role, pids in result.pids.items())
    return Report(
        title=f"Standing agents: {n} idle agents on one worker, a storm of {scale.storm}",
        figures=figures,
        notes=(
            f"A real `agentrt up` (pids {pids}; ready {result.startup_s:.1f} s after spawn): "
            "one worker, the embedded dev server, SQLite, the scripted model, a bearer token.",
            f"Start: {n} tenants enabled {scale.concurrency} at a time (the requests took "
            f"{start.requests_s:.1f} s); each bootstraps its SOA, which greets "
            "(AgentInitialized: one scripted model call, soa_send_message, phase_complete) "
            "and queues its next heartbeat 24 h away.",
            f"Worker memory per idle agent: {per_agent_kb:.1f} KB (RSS with {n} agents minus "
            "RSS before any, over the count); MB = 10^6 bytes.",
            f"Idle: {result.idle.model_calls} model calls and {result.idle.turns} ledger turns "
            f"over {scale.idle_windows} × {scale.idle_window_s:g} s while every agent waits "
            "for its heartbeat (a Temporal timer; nothing polls).",
            "Storm: the queued heartbeats of the agents were moved to now in the store and "
            "each workflow got its `wake` signal, as their timers would fire together; "
            + storms
            + ".",
            "The first heartbeat after the greeting plans (its input hash differs from the "
            "greeting's); the second has the same hash, so it is idle: no model call.",
            *_tenant_notes(result),
            machine_facts(),
        ),
    )


def _tenant_figures(result: Run) -> list[Figure]:
    n = result.scale.tenant_agents
    return [
        Figure(
            f"one tenant, {n} agents at its cap of {TENANT_CAP}: an event to each at once",
            tuple(each.ticks_per_s for each in result.caps),
            unit="ticks/s",
        ),
        Figure(
            "the tenant's agents seen ticking at once (sampled every 20 ms)",
            tuple(float(each.max_ticking) for each in result.caps + tuple(result.overshoots)),
            unit="agents",
        ).with_target(CAP_TARGET),
        Figure(
            f"worst spend past the weekly credit: {n} ticks at once against a credit "
            f"for {TICKS_COVERED:g}",
            tuple(each.overshoot_percent for each in result.overshoots),
            unit="% of the credit",
        ).with_target(OVERSHOOT_TARGET),
    ]


def _tenant_notes(result: Run) -> tuple[str, ...]:
    caps = "; ".join(f"{each.agents} ticks in {each.ticks_s:.2f} s" for each in result.caps)
    bursts = "; ".join(
        f"credit ${each.credit_usd:.4f} (a tick reserves ${each.tick_reservation_usd:.4f}), "
        f"spent ${each.spent_usd:.4f}, {each.answered} answered, {each.paused} paused"
        for each in result.overshoots
    )
    return (
        f"Cap: one tenant's SOA and {result.scale.tenant_agents - 1} Compliance agents, "
        f"MaxConcurrentInstancesPerTenant {TENANT_CAP}; each round posts a "
        f"MissionStateChanged to every agent at once and times until each turn is in the "
        f"ledger: {caps}. Each round's event payload differs, so every tick plans.",
        "Overshoot, last: the agents' site (`Agent:Default`) rebound to an OpenAI-compatible "
        "endpoint on loopback (bench/llm_provider.py: each tick one call, answered with "
        "phase_complete, usage a token per four characters of the messages and the tool "
        "definitions) priced at "
        f"${PRICE['inputPerMTokUsd']:g} per million input tokens and output free (a "
        "call's worst case is its prompt's estimate, tool definitions included), a tenant "
        "of the same shape, the "
        f"weekly credit set to what the tenant spent plus {TICKS_COVERED:g} ticks' "
        f"reservations (one tick measured alone first), then an event to every agent at "
        f"once: {bursts}. The overshoot is max(0, spent - credit) over the credit.",
    )


def scale_from(options: BenchOptions) -> Scale:
    agents = options.agents or DEFAULT_AGENTS
    return Scale(
        agents=agents,
        storm=min(options.storm or DEFAULT_STORM, agents),
        idle_windows=IDLE_WINDOWS,
        idle_window_s=options.idle_seconds or IDLE_WINDOW_S,
    )


async def benchmark(options: BenchOptions) -> Report:
    scale = scale_from(options)
    with tempfile.TemporaryDirectory(prefix="agentrt-bench-agents-") as tmp:
        return report(await run(scale, Path(tmp)))
