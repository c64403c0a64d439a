"""`intelligence_code_search` of the standing agents through the workspace fence (issue 18,
items 2 and 3): a symlink out of the workspace is never followed (its target's text was
returned), the data dir inside the workspace is never searched, and a FIFO is never
opened (it blocked the worker's thread for good). A FIFO left blocking by a regression is
released by opening its other end, so the test fails instead of hanging."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from runtime.standing_agents.contracts import AgentType
from runtime.standing_agents.tool_context import ToolContext
from runtime.standing_agents.tools import HANDLERS
from runtime.store.engine import Store

BOUND = 30.0


def search(root: Path, query: str, data_dir: Path | None = None) -> dict[str, Any]:
    context = ToolContext(
        store=cast(Store, None),  # code_search reads the workspace only
        tenant="t",
        instance_id="i",
        agent_type=AgentType.SOA,
        generation=1,
        op_id="op",
        now=datetime.now(UTC),
        investigation_workspace="demo",
        workspace_root=root,
        data_dir=data_dir,
    )
    return HANDLERS["intelligence_code_search"](context, {"query": query, "limit": 50})


def test_code_search_does_not_follow_a_symlink_out(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("needle = 1\n")
    (ws / "src" / "alias.py").symlink_to(ws / "src" / "app.py")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle in the operator's secret\n")
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    (ws / "leakdir").symlink_to(outside, target_is_directory=True)
    found = search(ws, "needle")
    paths = sorted(m["path"] for m in found["matches"])
    assert paths == ["src/alias.py", "src/app.py"]
    assert "secret" not in str(found)


def test_code_search_skips_the_data_dir_in_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    data = ws / "state"  # not hidden by name: only the fence keeps it out
    (data / "credentials").mkdir(parents=True)
    (data / "credentials" / "github.json").write_text('{"needle": "gho_token"}\n')
    (ws / "main.py").write_text("needle\n")
    found = search(ws, "needle", data_dir=data)
    assert [m["path"] for m in found["matches"]] == ["main.py"]
    assert "gho_token" in str(search(ws, "needle"))  # without the fence's data dir: found


def test_code_search_never_opens_a_fifo(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("needle\n")
    fifo = ws / "b.pipe"
    os.mkfifo(fifo)
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.setdefault("v", search(ws, "needle")), daemon=True)
    worker.start()
    worker.join(BOUND)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        raise AssertionError("code_search blocked on a FIFO")
    assert [m["path"] for m in box["v"]["matches"]] == ["a.py"]
