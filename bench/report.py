"""What a benchmark hands back to the runner, and how it is printed.

Benchmarks return data, not text, so the runner prints every benchmark the same way and a
later benchmark can reuse another's figures (e.g. quote a ratio to the substrate baseline).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bench.stats import Summary, ratio, summarize


@dataclass(frozen=True)
class BenchOptions:
    runs: int
    warmup: int


@dataclass(frozen=True)
class Figure:
    """One measured quantity: its samples in milliseconds, optionally against a baseline."""

    name: str
    samples_ms: tuple[float, ...]
    # A figure measured in the same process that this one is compared with; same-process
    # matters because absolute latencies vary a lot between machines and runs.
    baseline: Figure | None = None

    @property
    def summary(self) -> Summary:
        return summarize(self.samples_ms)

    @property
    def ratio_to_baseline(self) -> float | None:
        if self.baseline is None:
            return None
        return ratio(self.summary.median, self.baseline.summary.median)

    def against(self, baseline: Figure) -> Figure:
        """This figure, reported as a ratio of medians to `baseline`."""
        return Figure(self.name, self.samples_ms, baseline)


@dataclass(frozen=True)
class Report:
    title: str
    figures: Sequence[Figure]
    notes: Sequence[str] = field(default_factory=tuple)


async def sample(
    operation: Callable[[], Awaitable[float]], *, runs: int, warmup: int
) -> tuple[float, ...]:
    """Run `operation` warmup + runs times; keep the last `runs` durations (ms) it returns.

    The operation times itself, because most operations need untimed setup first (start a
    workflow, wait until it is blocked) and only a slice of them is the measured figure.
    """
    for _ in range(warmup):
        await operation()
    return tuple([await operation() for _ in range(runs)])


def elapsed_ms(started: float) -> float:
    """Milliseconds since `started`, a `time.perf_counter()` reading."""
    return (time.perf_counter() - started) * 1000


def format_report(report: Report) -> str:
    with_ratio = any(figure.baseline is not None for figure in report.figures)
    header = ["figure", "n", "median", "p95", "min", "max"]
    if with_ratio:
        header += ["× baseline", "baseline"]
    rows = [header]
    for figure in report.figures:
        s = figure.summary
        row = [figure.name, str(s.n), *(f"{v:.2f}" for v in (s.median, s.p95, s.min, s.max))]
        if with_ratio:
            factor = figure.ratio_to_baseline
            row += [
                "" if factor is None else f"{factor:.2f}",
                "" if figure.baseline is None else figure.baseline.name,
            ]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    # Names (and the baseline's name) read best left-aligned, numbers right-aligned.
    left = {0, len(header) - 1} if with_ratio else {0}

    def line(row: list[str]) -> str:
        cells = [
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    out = [f"{report.title} — times in ms", "", line(rows[0]), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in rows[1:]]
    if report.notes:
        out.append("")
        out += [f"* {note}" for note in report.notes]
    return "\n".join(out)
