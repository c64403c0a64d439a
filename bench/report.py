"""What a benchmark hands back to the runner, and how it is printed.

Benchmarks return data, not text, so the runner prints every benchmark the same way and a
later benchmark can reuse another's figures (e.g. quote a ratio to the substrate baseline).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from bench.stats import Summary, percentile, ratio, summarize


@dataclass(frozen=True)
class BenchOptions:
    runs: int
    warmup: int
    # Scale of the benchmarks that take one (standing-agents); None: their own default.
    agents: int | None = None
    storm: int | None = None
    idle_seconds: float | None = None


@dataclass(frozen=True)
class Target:
    """A figure's goal, printed beside it with PASS/MISS.

    The verdict is on the median; the tail (p95, or p5 when higher is better) is checked
    too and flagged when it misses. `reference` says where the number comes from.
    """

    value: float
    higher_is_better: bool = False
    reference: str = ""

    def met_by(self, value: float) -> bool:
        return value >= self.value if self.higher_is_better else value <= self.value

    def label(self) -> str:
        sign = "≥" if self.higher_is_better else "≤"
        text = f"{sign} {self.value:g}"
        return f"{text} ({self.reference})" if self.reference else text


@dataclass(frozen=True)
class Figure:
    """One measured quantity: its samples (in `unit`, ms unless said), optionally against a
    baseline and with a target."""

    name: str
    samples: tuple[float, ...]
    # A figure measured in the same process that this one is compared with; same-process
    # matters because absolute latencies vary a lot between machines and runs.
    baseline: Figure | None = None
    unit: str = "ms"
    target: Target | None = None

    @property
    def summary(self) -> Summary:
        return summarize(self.samples)

    @property
    def ratio_to_baseline(self) -> float | None:
        if self.baseline is None:
            return None
        return ratio(self.summary.median, self.baseline.summary.median)

    @property
    def tail(self) -> float:
        """The unfavourable tail: p95, or p5 for a figure where higher is better."""
        high = self.target is not None and self.target.higher_is_better
        return percentile(self.samples, 5 if high else 95)

    @property
    def verdict(self) -> str | None:
        """PASS/MISS on the median, with the tail flagged when only the median passes."""
        if self.target is None:
            return None
        if not self.target.met_by(self.summary.median):
            return "MISS"
        if not self.target.met_by(self.tail):
            high = self.target.higher_is_better
            return f"PASS ({'p5' if high else 'p95'} MISS)"
        return "PASS"

    def against(self, baseline: Figure) -> Figure:
        """This figure, reported as a ratio of medians to `baseline`."""
        return replace(self, baseline=baseline)

    def with_target(self, target: Target) -> Figure:
        return replace(self, target=target)


@dataclass(frozen=True)
class Report:
    title: str
    figures: Sequence[Figure]
    notes: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True)
class Part:
    """Figures and notes one measurement contributes to a report that holds several."""

    figures: tuple[Figure, ...]
    notes: tuple[str, ...] = ()


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
    with_unit = any(figure.unit != "ms" for figure in report.figures)
    with_target = any(figure.target is not None for figure in report.figures)
    header = ["figure", "n", "median", "p95", "min", "max"]
    if with_unit:
        header.insert(1, "unit")
    if with_ratio:
        header += ["× baseline", "baseline"]
    if with_target:
        header += ["target", "verdict"]
    rows = [header]
    for figure in report.figures:
        s = figure.summary
        row = [figure.name, str(s.n), *(f"{v:.2f}" for v in (s.median, s.p95, s.min, s.max))]
        if with_unit:
            row.insert(1, figure.unit)
        if with_ratio:
            factor = figure.ratio_to_baseline
            row += [
                "" if factor is None else f"{factor:.2f}",
                "" if figure.baseline is None else figure.baseline.name,
            ]
        if with_target:
            row += [
                "" if figure.target is None else figure.target.label(),
                figure.verdict or "",
            ]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    # Names, units, the baseline's name and targets read best left-aligned, numbers right.
    left = {i for i, name in enumerate(header) if name in LEFT_ALIGNED}

    def line(row: list[str]) -> str:
        cells = [
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    units = "" if with_unit else " — times in ms"
    out = [f"{report.title}{units}", "", line(rows[0]), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in rows[1:]]
    if report.notes:
        out.append("")
        out += [f"* {note}" for note in report.notes]
    return "\n".join(out)


LEFT_ALIGNED = frozenset({"figure", "unit", "baseline", "target", "verdict"})
