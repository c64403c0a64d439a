"""The benchmarks `python -m bench` knows: add one line per new benchmark."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from bench import (
    approvals,
    llm_chain,
    mcp,
    mcp_server,
    sessions,
    standing_agents,
    substrate,
    turn,
    windows_pool,
)
from bench.report import BenchOptions, Report

# A coroutine function, so `asyncio.run` can drive it.
Benchmark = Callable[[BenchOptions], Coroutine[Any, Any, Report]]

BENCHMARKS: dict[str, Benchmark] = {
    "substrate": substrate.benchmark,
    "substrate-tuned": substrate.benchmark_tuned,
    "turn": turn.benchmark,
    "sessions": sessions.benchmark,
    "session": sessions.benchmark_session,
    "sse": sessions.benchmark_sse,
    "rss": sessions.benchmark_rss,
    "standing-agents": standing_agents.benchmark,
    "llm-chain": llm_chain.benchmark,
    "windows-pool": windows_pool.benchmark,
    "mcp": mcp.benchmark,
    "mcp-server": mcp_server.benchmark,
    "approvals": approvals.benchmark,
}

# `--runs` when not given: 20, unless the benchmark names its own here.
RUNS_DEFAULT = 20
RUNS: dict[str, int] = {
    "turn": turn.DEFAULT_RUNS,
    "sessions": sessions.DEFAULT_RUNS,
    "session": sessions.DEFAULT_RUNS,
    "sse": sessions.DEFAULT_RUNS,
    "mcp": mcp.DEFAULT_RUNS,
    "mcp-server": mcp_server.DEFAULT_RUNS,
    "approvals": approvals.DEFAULT_RUNS,
}
