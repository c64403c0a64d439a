"""The README as a newcomer reads it: every setting documented, every example working.

The curl recipes of "A first agent-tools turn" and "A first session prompt" run
against a real `agentrt up`, exactly as printed (only the port differs).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli import build_parser
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from tests.e2e.test_up_e2e import Up, _wait_worker_live, agentrt_up
from tests.mcp_helpers import EVERYTHING, node_server

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
RECIPE = re.compile(r"<!-- recipe: ([a-z-]+) -->\n```sh\n(.*?)```", re.DOTALL)
RECIPES = dict(RECIPE.findall(README))
README_URL = "http://127.0.0.1:4170"
# Recipes of strict mutation routes: they run against a daemon with a token.
TOKEN_RECIPES = {"standing-agents", "model-routing", "mcp", "agents-mcp", "coders"}
TOKEN = "readme-token"


def _section(title: str) -> str:
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def _environment_name(name: str) -> str:
    alias = Settings.model_fields[name].validation_alias
    choices = getattr(alias, "choices", None)
    return str(choices[0]) if choices else f"AGENTRT_{name.upper()}"


@pytest.mark.parametrize("name", [n for n in Settings.model_fields if n != "temporal_embedded"])
def test_every_setting_is_in_the_configuration_table(name: str) -> None:
    table = _section("Configuration")
    assert f"`{_environment_name(name)}`" in table


def test_every_flag_and_the_log_level_are_in_the_configuration_table() -> None:
    table = _section("Configuration")
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    up = commands.choices["up"]
    flags = [o for a in up._actions for o in a.option_strings if o not in ("-h", "--help")]
    assert flags
    missing = [flag for flag in flags if f"`{flag}`" not in table]
    assert not missing
    assert "`AGENTRT_LOG_LEVEL`" in table


def test_commands_are_shown_with_the_venv() -> None:
    """Commands a reader copies name `.venv/bin/...`: the venv is not assumed active."""
    for block in re.findall(r"```sh\n(.*?)```", README, re.DOTALL):
        for line in block.splitlines():
            assert not re.match(r"\s*(agentrt|python|pip|pytest) ", line), line
    assert "`python -m bench" not in README and "`agentrt load-investigation" not in README


def test_the_investigation_example_loads(tmp_path: Path) -> None:
    from runtime.investigation.loader import load_investigation

    section = _section("Investigation data")
    example = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert example is not None
    path = tmp_path / "case.json"
    path.write_text(example.group(1))
    store = Store(f"sqlite:///{tmp_path / 'agentrt.db'}")
    upgrade_to_head(store.engine)
    try:
        with store.session() as session:
            counts = load_investigation(session, "example", json.loads(path.read_text()))
    finally:
        store.dispose()
    assert counts["nodes"] == 2 and counts["edges"] == 1


def test_the_recipes_are_all_there() -> None:
    assert set(RECIPES) == {
        "agent-tools",
        "agent-tools-model",
        "agents-mcp",
        "coders",
        "mcp",
        "model-routing",
        "session",
        "session-tool",
        "standing-agents",
    }
    for text in RECIPES.values():
        assert text.startswith(f"A={README_URL}\n")


def test_the_recipes_run_against_agentrt_up(tmp_path: Path) -> None:
    if shutil.which("curl") is None or shutil.which("jq") is None:
        pytest.skip("curl and jq are needed to run the README's recipes (.ci/run installs them)")
    outputs: dict[str, str] = {}
    with agentrt_up(tmp_path) as up:
        up.wait_healthy()
        _wait_worker_live(up.api_url)
        for name, recipe in RECIPES.items():
            if name in TOKEN_RECIPES:
                continue
            work = tmp_path / name
            work.mkdir()
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", recipe.replace(README_URL, up.api_url)],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert done.returncode == 0, f"{name}: {done.stdout}\n{done.stderr}"
            outputs[name] = done.stdout
    turn = outputs["agent-tools"]
    assert '"admitted"' in turn
    assert "Tomas Reiner is the beneficial owner" in turn
    assert "[claim:c-beneficial-owner;" in turn and "source:s-audit-memo" in turn
    assert outputs["agent-tools-model"].splitlines()[-2:] == [
        "completed",
        "Kestrel Holdings Ltd is registered in Cyprus.",
    ]
    session = outputs["session"]
    assert '{"stopReason":"end_turn"}' in session
    assert "`prompt` is required and must be a non-empty array of content blocks" in session
    assert "event: turn_complete" in session
    tool = outputs["session-tool"]
    workspace = tmp_path.resolve() / ".data" / "workspace"
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert f'"workspaceCwd": "{workspace}"' in tool


@pytest.fixture(scope="module")
def token_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    """One `agentrt up` with a token for the recipes of strict routes that work their own
    tenant (acme, acme-coders, acme-mcp) or the workspace's MCP servers, as a reader
    running them one after another on one daemon would (model routing has its own). The
    module runs whole on one worker (SHARED_STACK_MODULES, tests/conftest.py)."""
    if shutil.which("curl") is None or shutil.which("jq") is None:
        pytest.skip("curl and jq are needed to run the README's recipes (.ci/run installs them)")
    workdir = tmp_path_factory.mktemp("token-stack")
    env = {"AGENTRT_TOKEN": TOKEN, "PATH": _offline_npx(workdir)}
    with agentrt_up(workdir, env) as up:
        up.wait_healthy()
        yield up


def _run_recipe(up: Up, name: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", RECIPES[name].replace(README_URL, up.api_url)],
        cwd=cwd,
        env={**os.environ, "AGENTRT_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_standing_agents_recipe_runs_against_agentrt_up(
    token_stack: Up, tmp_path: Path
) -> None:
    done = _run_recipe(token_stack, "standing-agents", tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    out = done.stdout
    assert "agent: Hello, I am your standing agent." in out
    assert "agent: Received your message: How are things?" in out
    assert '{"status":"resolved","resolution":"approve"}' in out
    assert '"Incident"' in out
    assert '{"from":"Strategic","to":"Incident","source":"ui"}' in out
    assert '"eventKind":"AgentInitialized"' in out


def _offline_npx(tmp_path: Path) -> str:
    """A PATH whose `npx` runs the server-everything copy tests/mcp_servers installed."""
    server = node_server(EVERYTHING)
    shims = tmp_path / "bin"
    shims.mkdir()
    npx = shims / "npx"
    npx.write_text(f"#!/bin/sh\nexec {server['command']} {server['args'][0]}\n")
    npx.chmod(0o755)
    return f"{shims}:{os.environ['PATH']}"


def test_the_agents_mcp_recipe_runs_against_agentrt_up(token_stack: Up, tmp_path: Path) -> None:
    """A standing agent's consequential MCP call: a decision, approved, run once."""
    done = _run_recipe(token_stack, "agents-mcp", tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert json.loads(lines[0]) == {
        "serverName": "everything",
        "transport": "stdio",
        "trust": False,
    }
    assert json.loads(lines[1]) == {
        "tenant": "acme-mcp",
        "agentType": "Soa",
        "tools": ["mcp__everything__*"],
    }
    assert json.loads(lines[2]) == {"name": "Strategic", "mcp": True}
    assert json.loads(lines[3]) == {
        "kind": "mcp_call",
        "title": "Run MCP tool toggle-simulated-logging of everything?",
        "tool": "mcp__everything__toggle-simulated-logging",
    }
    assert json.loads(lines[4]) == {"status": "resolved", "resolution": "approve"}
    assert json.loads(lines[5]) == {
        "tool": "mcp__everything__toggle-simulated-logging",
        "outcome": "ok",
    }


def test_the_coders_recipe_runs_against_agentrt_up(token_stack: Up, tmp_path: Path) -> None:
    """The SOA proposes a task for any coder; curl, as an MCP coder, works it."""
    done = _run_recipe(token_stack, "coders", tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert json.loads(lines[0]) == {"agentId": "my-coder-1", "capabilities": ["python"]}
    assert json.loads(lines[1]) == {"state": "claimed", "holder": "coder:my-coder"}
    assert json.loads(lines[2]) == {"state": "succeeded", "summary": "Ported."}
    assert lines[3] == "DependencyCompleted turns: 1"


def test_the_mcp_recipe_runs_against_agentrt_up(token_stack: Up, tmp_path: Path) -> None:
    """The recipe's `npx -y @modelcontextprotocol/server-everything`, offline: an `npx` on
    agentrt's PATH that runs the copy tests/mcp_servers installed (nothing downloads)."""
    done = _run_recipe(token_stack, "mcp", tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert json.loads(lines[0]) == {"serverName": "everything", "transport": "stdio", "trust": True}
    assert json.loads(lines[1]) == {"name": "everything", "mcpStatus": "connected", "echo": True}
    assert lines[2] == '{"stopReason":"end_turn"}'
    assert lines[-1] == "Echo: hi from MCP"


def test_the_model_routing_recipe_runs_against_agentrt_up(tmp_path: Path) -> None:
    """On a stack of its own: it reroutes the model the other recipes' prompts use, and
    reads the attempts of a stack where no prompt ran yet."""
    if shutil.which("curl") is None or shutil.which("jq") is None:
        pytest.skip("curl and jq are needed to run the README's recipes (.ci/run installs them)")
    with agentrt_up(tmp_path, {"AGENTRT_TOKEN": TOKEN}) as up:
        up.wait_healthy()
        done = _run_recipe(up, "model-routing", tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    providers = [json.loads(line) for line in lines[:2]]
    assert [p["providerId"] for p in providers] == ["openai", "openrouter"]
    assert [c["kind"] for c in providers[0]["credentials"]] == ["apiKeyEnv", "apiKeyEnv"]
    assert json.loads(lines[2]) == {
        "presetId": "everyday",
        "fallback": [{"model": "openai/gpt-4o-mini", "provider": "openrouter"}],
    }
    assert json.loads(lines[3])["resolvedFrom"] == "Session:Default"
    assert json.loads(lines[4]) == {
        "siteId": "Session:Default",
        "parent": "Default",
        "presetId": "everyday",
        "resolvedPresetId": "everyday",
        "resolvedFrom": "Session:Default",
    }
    assert json.loads(lines[5])["resolvedPresetId"] == "settings"
    assert json.loads(lines[6]) == {"model": "gpt-4o-mini", "source": "genai-prices"}
    assert json.loads(lines[7]) == {"model": "openai/gpt-4o-mini", "source": "override"}
    assert lines[8:] == []  # no prompt ran: no attempt yet
