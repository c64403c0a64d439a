"""Skips say why, and in CI (AGENTRT_CI=1, set by .ci/run) a skip is a failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_skipping_test(tmp_path: Path, ci: bool, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_skipping.py").write_text(
        "import pytest\n\ndef test_needs_a_tool():\n    pytest.skip('the tool is not installed')\n"
        "\ndef test_passes():\n    pass\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTRT_CI"}
    if ci:
        env["AGENTRT_CI"] = "1"
    return subprocess.run(
        # This suite's conftest as a plugin, on a test file outside the suite.
        [
            *(sys.executable, "-m", "pytest", "-p", "tests.conftest", "-c", os.devnull, "-rs"),
            *("-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path), *extra),
        ],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_skip_prints_its_reason(tmp_path: Path) -> None:
    run = _run_skipping_test(tmp_path, ci=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SKIPPED" in run.stdout and "the tool is not installed" in run.stdout


def test_in_ci_a_skip_is_a_failure(tmp_path: Path) -> None:
    run = _run_skipping_test(tmp_path, ci=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "skipped in CI" in run.stdout and "the tool is not installed" in run.stdout


def test_in_ci_a_skip_is_a_failure_in_xdist_workers_too(tmp_path: Path) -> None:
    """`make test` runs pytest-xdist workers: the hook runs there, the report says why."""
    run = _run_skipping_test(tmp_path, True, "-n", "1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "[gw0]" in run.stdout and "1 failed, 1 passed" in run.stdout
    assert "skipped in CI" in run.stdout and "the tool is not installed" in run.stdout


def test_make_test_runs_pytest_in_parallel() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "PYTEST = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest" in makefile
    assert "$(PYTEST) -q -n $(PYTEST_WORKERS)" in makefile


def test_pyproject_asks_for_skip_reasons() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'addopts = "-rs"' in pyproject
    assert "export AGENTRT_CI=1" in (ROOT / ".ci" / "run").read_text()
    # The script at least parses (bash -n reads it without running anything).
    subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")], check=True, timeout=30)
