"""(5) Memory of a real `agentrt up`: RSS of its API and worker with 0, 1, 10, 100 sessions.

`agentrt up` runs as a user runs it (a subprocess on free ports, its own embedded dev server
with its SQLite file, `--max-sessions` raised); sessions are created through POST /session
(thread scope) and each is confirmed running in the worker (GET /session/{id}/context is
answered by a workflow query) before memory is read. Memory is VmRSS of
/proc/<pid>/status for each child of the `agentrt up` process (and their own children),
read a few times per level; the Temporal dev server and the supervisor are reported apart.

The same run gives two cross-checks of (1) and (2) with API, worker and Temporal in their
own processes: the first POST /session after start, every other create, and one
`Prefer: wait` prompt in each of the 100 sessions.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.client import (
    confirm_running,
    create_session,
    prompt_prefer_wait,
    wait_worker_polling,
)
from bench.daemon import child_env, free_port, spawn, stop
from bench.procs import Memory, children, cmdline, descendants, memory, role
from bench.report import Figure, Part, Target, elapsed_ms

SESSION_LEVELS = (1, 10, 100)
MAX_SESSIONS = 200
# Reads of every process's RSS per level, this far apart.
READS = 10
READ_INTERVAL_S = 0.2
# Pause after reaching a level, so work the last request started (workflow tasks, the
# journal writes, the garbage collector) is over before memory is read.
SETTLE_S = 1.0
STOP_TIMEOUT_S = 60.0

RSS_TARGET = Target(250, reference="reference daemon 403 idle, 476 with 5 sessions")
CREATE_TARGET = Target(20, reference="reference daemon 54")
PROMPT_TARGET = Target(100, reference="reference daemon 314")

ROLES = ("api", "worker", "temporal", "supervisor")


@dataclass(frozen=True)
class Tree:
    """The processes of one `agentrt up`, by role (each with its own descendants)."""

    pids: Mapping[str, tuple[int, ...]]

    @classmethod
    def of(cls, supervisor: int) -> Tree:
        pids: dict[str, list[int]] = {"supervisor": [supervisor]}
        for child in children(supervisor):
            name = role(cmdline(child))
            if name is None:
                raise RuntimeError(f"unexpected child of agentrt up: {cmdline(child)}")
            pids.setdefault(name, []).extend([child, *descendants(child)])
        missing = [name for name in ROLES if name not in pids]
        if missing:
            raise RuntimeError(f"agentrt up has no {', '.join(missing)} child")
        return cls({name: tuple(found) for name, found in pids.items()})

    def memory(self) -> dict[str, Memory]:
        return {name: sum(map(memory, pids), Memory()) for name, pids in self.pids.items()}


# -- agentrt up ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Up:
    process: subprocess.Popen[bytes]
    api_url: str
    log: Path


def _spawn_up(root: Path) -> Up:
    api, frontend, ui = free_port(), free_port(), free_port()
    env = child_env(
        {
            "AGENTRT_PORT": str(api),
            "AGENTRT_TEMPORAL_PORT": str(frontend),
            "AGENTRT_TEMPORAL_UI_PORT": str(ui),
        }
    )
    log = root / "up.log"
    args = [sys.executable, "-m", "cli", "up", "--max-sessions", str(MAX_SESSIONS)]
    process = spawn([*args, "--workspace", str(root)], env, log, root)
    return Up(process, f"http://127.0.0.1:{api}", log)


@dataclass(frozen=True)
class Level:
    label: str
    reads: tuple[dict[str, Memory], ...]  # by role, per read

    def samples(self, *roles: str) -> tuple[float, ...]:
        """VmRSS of `roles` together, MB, per read."""
        return tuple(sum(read[name].rss for name in roles) / 1e6 for read in self.reads)

    def median(self, name: str, part: str = "rss") -> float:
        """Median of one role's `part` of its memory (a field of Memory), MB."""
        values = sorted(getattr(read[name], part) for read in self.reads)
        return float(values[len(values) // 2]) / 1e6


async def _read_level(tree: Tree, label: str) -> Level:
    await asyncio.sleep(SETTLE_S)
    reads = []
    for _ in range(READS):
        reads.append(tree.memory())
        await asyncio.sleep(READ_INTERVAL_S)
    return Level(label, tuple(reads))


@dataclass(frozen=True)
class UpRun:
    startup_ms: float  # spawn → worker polling
    first_create_ms: float
    creates_ms: tuple[float, ...]
    prompts_ms: tuple[float, ...]
    levels: tuple[Level, ...]
    tree: Tree


async def run_up(root: Path) -> UpRun:
    started = time.perf_counter()
    up = await asyncio.to_thread(_spawn_up, root)
    try:
        async with httpx.AsyncClient(base_url=up.api_url, timeout=60) as http:
            await wait_worker_polling(http, lambda: up.process.poll() is None, up.log)
            startup = elapsed_ms(started)
            tree = await asyncio.to_thread(Tree.of, up.process.pid)
            levels = [await _read_level(tree, "idle")]
            sessions: list[str] = []
            creates: list[float] = []
            for level in SESSION_LEVELS:
                while len(sessions) < level:
                    session_id, duration = await create_session(http)
                    sessions.append(session_id)
                    creates.append(duration)
                    await confirm_running(http, session_id)
                levels.append(await _read_level(tree, f"{level} session{'s' if level > 1 else ''}"))
            prompts = [await prompt_prefer_wait(http, session_id) for session_id in sessions]
            levels.append(await _read_level(tree, f"{len(sessions)} sessions, 1 prompt each"))
            # Every process still there: a restart would have read a fresh, smaller one.
            if await asyncio.to_thread(Tree.of, up.process.pid) != tree:
                raise RuntimeError("a child of agentrt up was restarted during the run")
    finally:
        await asyncio.to_thread(stop, up.process, STOP_TIMEOUT_S)
    return UpRun(startup, creates[0], tuple(creates[1:]), tuple(prompts), tuple(levels), tree)


def _breakdown(levels: Iterable[Level]) -> str:
    parts = [
        f"{level.label}: "
        + ", ".join(f"{name} {level.median(name):.0f}" for name in ("api", "worker", "temporal"))
        + f" (supervisor {level.median('supervisor'):.0f})"
        for level in levels
    ]
    return "(5) RSS medians by process, MB: " + "; ".join(parts) + "."


def _parts(level: Level) -> str:
    """What the RSS is made of, at one level."""
    parts = [
        f"{name} {level.median(name):.0f} = {level.median(name, 'anon'):.0f} anonymous + "
        f"{level.median(name, 'file'):.0f} file-backed, PSS {level.median(name, 'pss'):.0f}"
        for name in ("api", "worker", "supervisor")
    ]
    pss = level.median("api", "pss") + level.median("worker", "pss")
    return (
        f"(5) RSS parts at {level.label}, MB: " + "; ".join(parts) + ". File-backed pages "
        "(the interpreter, extension modules, the Temporal SDK's Rust core) are shared by the "
        f"three Python processes; PSS, which divides them among their users, is {pss:.0f} MB "
        "for API + worker."
    )


async def measure() -> Part:
    """One `agentrt up`, each level read READS times (`--runs` does not apply)."""
    with tempfile.TemporaryDirectory(prefix="agentrt-bench-rss-") as tmp:
        run = await run_up(Path(tmp))
    figures: list[Figure] = []
    for level in run.levels:
        figure = Figure(
            f"(5) RSS API + worker, {level.label}", level.samples("api", "worker"), unit="MB"
        )
        if level.label.startswith(f"{SESSION_LEVELS[-1]} "):
            figure = figure.with_target(RSS_TARGET)
        figures.append(figure)
    idle, last = run.levels[0], run.levels[-1]
    for level in (idle, last):
        figures.append(
            Figure(
                f"(5) RSS Temporal dev server, {level.label}", level.samples("temporal"), unit="MB"
            )
        )
    figures += [
        Figure("(5) first POST /session after `agentrt up`", (run.first_create_ms,)),
        Figure("(5) POST /session on `agentrt up`", run.creates_ms).with_target(CREATE_TARGET),
        Figure("(5) prompt Prefer: wait on `agentrt up`", run.prompts_ms).with_target(
            PROMPT_TARGET
        ),
    ]
    pids = ", ".join(f"{name} {'/'.join(map(str, run.tree.pids[name]))}" for name in ROLES)
    notes = (
        f"(5) a real `agentrt up --max-sessions {MAX_SESSIONS}` (pids {pids}), ready (worker "
        f"polling) {run.startup_ms / 1000:.1f} s after spawn; VmRSS read {READS} times "
        f"{READ_INTERVAL_S:g} s apart per level, {SETTLE_S:g} s after reaching it; MB = 10^6 "
        "bytes. Sessions are created one by one (POST /session, then GET …/context so the "
        "worker holds each workflow), then one Prefer: wait prompt runs in each.",
        _breakdown(run.levels),
        _parts(last),
        "(5) cross-checks over separate processes: the first create is the first request "
        "after the worker polls (reference daemon: 1.1 s); the other creates run with 1–99 "
        "sessions already live; prompts run one after the other, one per session.",
    )
    return Part(tuple(figures), notes)
