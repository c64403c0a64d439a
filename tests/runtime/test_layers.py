"""`runtime/` is the shared kernel: it imports nothing above it (DESIGN.md, Layout).

The API, the worker, workflows and activities import runtime; the CLI (`cli.py`)
imports everything. An import the other way would pull the API or every activity
into processes that need neither, and make the layers circular.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ABOVE_RUNTIME = ("api", "workflows", "activities", "worker", "cli", "bench", "tests")


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


RUNTIME_FILES = sorted((ROOT / "runtime").rglob("*.py"))


@pytest.mark.parametrize("path", RUNTIME_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_runtime_imports_nothing_above_it(path: Path) -> None:
    offending = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}"
        for line, module in _imported_modules(path)
        if module.split(".")[0] in ABOVE_RUNTIME
    ]
    assert not offending, "\n".join(offending)


def test_the_walk_sees_the_runtime_package() -> None:
    assert len(RUNTIME_FILES) > 20
    assert ROOT / "runtime" / "settings.py" in RUNTIME_FILES


WORKFLOW_FILES = sorted((ROOT / "workflows").rglob("*.py"))


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_workflows_import_no_activity(path: Path) -> None:
    """Workflows call activities by name (runtime contracts): the API imports workflows."""
    offending = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}"
        for line, module in _imported_modules(path)
        if module.split(".")[0] in ("activities", "api", "worker", "cli")
    ]
    assert not offending, "\n".join(offending)


def test_the_api_process_loads_no_activity() -> None:
    """Workflow ids, search attributes and workflow classes are importable by the API
    without pulling the activities (model clients, tools) into its process."""
    code = (
        "import sys, api.app; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('activities', 'worker')); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_api_loads_the_mcp_sdk_on_the_first_request_to_mcp_only() -> None:
    """The MCP SDK is about a fifth of the API's start: api/mcp_server/endpoint.py loads
    it, and builds agentrt's MCP server, when `/mcp` is first called."""
    code = (
        "import sys, api.app; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')"
        " or m == 'api.mcp_server.tools'); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
