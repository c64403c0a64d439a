"""The supervisor's pure parts: the restart pause, and the Temporal child's environment."""

from __future__ import annotations

import pytest

from runtime.temporal import temporal_child_env
from supervisor import Backoff


def test_backoff_doubles_on_quick_deaths_up_to_its_cap() -> None:
    backoff = Backoff(first=0.5, cap=30.0, stable=60.0)
    pauses = [backoff.delay(ran_for=1.0) for _ in range(9)]
    assert pauses == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_backoff_starts_over_after_a_stable_run() -> None:
    backoff = Backoff(first=0.5, cap=30.0, stable=60.0)
    for _ in range(5):
        backoff.delay(ran_for=0.1)
    assert backoff.delay(ran_for=60.0) == 0.5
    assert backoff.delay(ran_for=2.0) == 1.0


def test_backoff_never_overflows() -> None:
    backoff = Backoff(first=0.5, cap=30.0)
    for _ in range(2000):
        assert backoff.delay(ran_for=0.0) <= 30.0


@pytest.mark.parametrize(
    "name", ["OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME", "otel_x"]
)
def test_temporal_child_env_drops_opentelemetry_variables(name: str) -> None:
    env = temporal_child_env({name: "console", "PATH": "/usr/bin", "HOME": "/root"})
    assert env == {"PATH": "/usr/bin", "HOME": "/root"}
