"""The windows-pool benchmark runs end to end (a smoke run at a small scale: only that
every figure is measured and no lease is left held is asserted, never a timing)."""

from __future__ import annotations

from bench.registry import BENCHMARKS
from bench.report import BenchOptions, format_report


async def test_the_windows_pool_benchmark_measures_every_figure() -> None:
    report = await BENCHMARKS["windows-pool"](BenchOptions(runs=2, warmup=0, agents=10))
    assert [figure.summary.n for figure in report.figures] == [2, 2, 2, 2, 10]
    text = format_report(report)
    assert "pool sessions left held: 0" in text
    print(text)
