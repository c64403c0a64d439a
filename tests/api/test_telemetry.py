"""OpenTelemetry: spans on routes and activities, exported only when asked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.telemetry import exporter_name

SCRIPT = """
import sys
from fastapi.testclient import TestClient
from api.app import create_app
from runtime.settings import Settings
from runtime.telemetry import setup_tracing

print("exporter:", setup_tracing("agentrt-test"), file=sys.stderr)
settings = Settings(data_dir=sys.argv[1], port=4170, temporal_address="127.0.0.1:1")
with TestClient(create_app(settings), base_url="http://127.0.0.1:4170") as client:
    assert client.get("/health").json() == {"status": "ok"}
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_exporter_by_default(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "exporter: None" in done.stderr
    assert '"name": "GET /health"' not in done.stdout


def test_console_exporter_shows_route_spans(tmp_path: Path) -> None:
    done = _run(tmp_path, OTEL_TRACES_EXPORTER="console")
    assert done.returncode == 0, done.stderr
    assert "exporter: console" in done.stderr
    assert '"name": "GET /health"' in done.stdout
    assert '"http.response.status_code": 200' in done.stdout


def test_exporter_selection(monkeypatch: object) -> None:

    mp = pytest.MonkeyPatch()
    try:
        for key in (
            "OTEL_TRACES_EXPORTER",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ):
            mp.delenv(key, raising=False)
        assert exporter_name() is None
        mp.setenv("OTEL_TRACES_EXPORTER", "none")
        assert exporter_name() is None
        mp.setenv("OTEL_TRACES_EXPORTER", "console")
        assert exporter_name() == "console"
        mp.delenv("OTEL_TRACES_EXPORTER")
        mp.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
        assert exporter_name() == "otlp"
        mp.setenv("OTEL_TRACES_EXPORTER", "none")  # the spec's off switch wins
        assert exporter_name() is None
    finally:
        mp.undo()
