"""The llm-chain benchmark runs end to end (a smoke run: the figures are the benchmark's
business; only that every figure is measured, with its attempt count checked, is asserted)."""

from __future__ import annotations

from bench.registry import BENCHMARKS
from bench.report import BenchOptions, format_report


async def test_the_chain_benchmark_measures_every_figure() -> None:
    report = await BENCHMARKS["llm-chain"](BenchOptions(runs=2, warmup=0))
    assert [figure.summary.n for figure in report.figures] == [2] * 5
    text = format_report(report)
    assert "(e) workflow: chain call, 2 attempts" in text
    print(text)
