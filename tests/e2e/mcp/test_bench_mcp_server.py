"""The mcp-server benchmark runs end to end (a smoke run: every figure measured, never a
timing asserted)."""

from __future__ import annotations

from bench.registry import BENCHMARKS
from bench.report import BenchOptions, format_report


async def test_the_mcp_server_benchmark_measures_every_figure() -> None:
    report = await BENCHMARKS["mcp-server"](BenchOptions(runs=2, warmup=0))
    assert [figure.summary.n for figure in report.figures] == [2, 2, 2]
    print(format_report(report))
