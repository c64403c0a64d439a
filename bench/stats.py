"""Pure statistics for benchmark samples: no I/O, no clock, easy to check by hand."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], p: float) -> float:
    """The `p`-th percentile (0..100) with linear interpolation between closest ranks.

    Same definition as numpy's default ("linear", Hyndman & Fan type 7), so figures can be
    cross-checked with any spreadsheet: rank = p/100 * (n - 1), interpolated between the two
    neighbouring order statistics.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within [0, 100], got {p}")
    ordered = sorted(values)
    rank = p / 100 * (len(ordered) - 1)
    low = math.floor(rank)
    high = math.ceil(rank)
    fraction = rank - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def ratio(figure_median: float, baseline_median: float) -> float:
    """How many times slower a figure is than its baseline (1.0 = as fast as the substrate)."""
    if baseline_median <= 0:
        raise ValueError(f"baseline median must be positive, got {baseline_median}")
    return figure_median / baseline_median


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    p95: float
    min: float
    max: float


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        raise ValueError("summary of no values")
    return Summary(
        n=len(values),
        median=median(values),
        p95=percentile(values, 95),
        min=min(values),
        max=max(values),
    )
