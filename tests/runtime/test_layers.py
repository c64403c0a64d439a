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
    """The MCP SDK is about a fifth of the API's start: api/mcp/server/endpoint.py loads
    it, and builds agentrt's MCP server, when `/mcp` is first called."""
    code = (
        "import sys, api.app; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')"
        " or m == 'api.mcp.server.tools'); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# -- features ---------------------------------------------------------------------------------
# One folder per feature, the same name in every layer (DESIGN.md, Layout). `service` (the
# API's own routes) has no other layer.
FEATURE_LAYERS = ("api", "workflows", "activities", "runtime")
API_ONLY = frozenset({"service", "security"})
# The kernel's packages in runtime/: every feature may use them; they use no feature.
KERNEL_PACKAGES = frozenset({"store", "migrations"})
# Kernel modules that must reach a feature, and why: the assembly of the journal's
# projections (each feature's, applied in the appending transaction), the settings,
# which check the device-flow providers and the longest session deadline at start, and
# the start-up checks, which hold the providers' endpoints to the egress rule.
KERNEL_ASSEMBLIES = {
    "runtime/journal_projections.py": frozenset(
        {"runtime.approvals", "runtime.sessions", "runtime.standing_agents"}
    ),
    "runtime/settings.py": frozenset({"runtime.device_flow", "runtime.sessions"}),
    "runtime/startup.py": frozenset({"runtime.device_flow"}),
}


def _folders(layer: str) -> set[str]:
    return {p.name for p in (ROOT / layer).iterdir() if (p / "__init__.py").is_file()}


TEST_LAYERS = ("tests/api", "tests/workflows", "tests/activities", "tests/runtime", "tests/e2e")
# Folders of tests/ that hold no feature's tests (the recorded histories test_replay.py runs).
TEST_SUPPORT = frozenset({"histories"})


def test_a_feature_has_the_same_name_in_every_layer() -> None:
    """api/, workflows/, activities/ and each layer of tests/ have a folder only for a
    feature that runtime/ knows (its contracts live there): no second name for one feature
    (`standing_agent`, `windows_pool`) in one of the layers."""
    runtime_names = _folders("runtime")
    strays = sorted(
        f"{layer}/{name}"
        for layer in ("api", "workflows", "activities", *TEST_LAYERS)
        for name in _folders(layer)
        if name not in runtime_names
        and not (layer == "api" and name in API_ONLY)
        and not (layer in TEST_LAYERS and name in TEST_SUPPORT)
    )
    assert not strays, strays


def _reached_features(path: Path) -> set[str]:
    """`layer.feature` for each feature of any layer that `path` imports, its own excepted."""
    own = path.relative_to(ROOT).parts
    own_feature = own[1] if len(own) > 2 else None
    reached = set()
    for _, module in _imported_modules(path):
        parts = module.split(".")
        if len(parts) < 2 or parts[0] not in FEATURE_LAYERS:
            continue
        if not (ROOT / parts[0] / parts[1] / "__init__.py").is_file():
            continue
        if parts[1] == own_feature or parts[1] in KERNEL_PACKAGES or parts[1] in API_ONLY:
            continue
        reached.add(f"{parts[0]}.{parts[1]}")
    return reached


KERNEL_FILES = sorted(
    [p for p in (ROOT / "runtime").glob("*.py")]
    + [p for name in KERNEL_PACKAGES for p in (ROOT / "runtime" / name).rglob("*.py")]
)


@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_kernel_uses_no_feature(path: Path) -> None:
    name = str(path.relative_to(ROOT))
    reached = _reached_features(path) - KERNEL_ASSEMBLIES.get(name, frozenset())
    assert not reached, f"{name} imports {sorted(reached)}"


# Which features each feature's folder reaches into today, layer by layer (the kernel and
# its own layer's kernel modules aside). A new edge fails the test below: add it here only
# when the feature must reach the other one, and prefer the other's contracts (runtime/).
FEATURE_EDGES = """
activities/agent_tools: activities.llm runtime.investigation runtime.llm
activities/approvals: runtime.agent_tools runtime.investigation runtime.standing_agents
activities/coding_tasks: runtime.llm runtime.sessions runtime.standing_agents
activities/device_flow: runtime.sessions
activities/llm: runtime.device_flow
activities/mcp: runtime.llm runtime.sessions runtime.tools
activities/sessions: activities.llm activities.mcp activities.workspace runtime.llm
    runtime.mcp runtime.standing_agents runtime.tools runtime.windows
    runtime.workspace
activities/standing_agents: activities.llm activities.mcp
    runtime.approvals runtime.coding_tasks runtime.llm runtime.mcp runtime.tools
activities/workspace: runtime.llm runtime.mcp runtime.sessions runtime.tools
api/agent_tools: api.approvals runtime.approvals runtime.investigation
api/approvals: runtime.tenants
api/coding_tasks: api.standing_agents runtime.sessions runtime.standing_agents runtime.tenants
api/device_flow: api.approvals runtime.approvals
api/mcp: api.coding_tasks api.standing_agents api.windows runtime.coding_tasks
    runtime.sessions runtime.standing_agents runtime.tenants runtime.windows runtime.workspace
api/security: runtime.agent_tools runtime.tenants
api/service: runtime.llm runtime.sessions
    runtime.standing_agents
api/sessions: api.approvals runtime.approvals runtime.llm runtime.mcp
    runtime.workspace
api/standing_agents: api.approvals api.sessions api.windows runtime.approvals runtime.llm
    runtime.sessions runtime.tenants runtime.windows
api/windows: runtime.agent_tools runtime.coding_tasks runtime.sessions
    runtime.standing_agents runtime.tenants
api/workspace: runtime.device_flow runtime.llm runtime.mcp runtime.sessions
runtime/agent_tools: runtime.investigation runtime.llm
runtime/approvals: runtime.notifications
runtime/coding_tasks: runtime.notifications runtime.sessions runtime.standing_agents
runtime/device_flow: runtime.approvals runtime.sessions
runtime/investigation: runtime.approvals runtime.tools
runtime/llm: runtime.standing_agents
runtime/mcp: runtime.workspace
runtime/notifications: runtime.approvals
runtime/sessions: runtime.llm runtime.mcp runtime.tools
runtime/standing_agents: runtime.approvals runtime.coding_tasks runtime.investigation
    runtime.llm runtime.mcp runtime.notifications runtime.sessions
    runtime.tools runtime.workspace
runtime/tools: runtime.llm
runtime/windows: runtime.tools
workflows/agent_tools: runtime.investigation runtime.llm runtime.windows workflows.llm
workflows/coding_tasks: runtime.sessions runtime.windows workflows.windows
workflows/llm: workflows.device_flow
workflows/sessions: runtime.coding_tasks runtime.llm runtime.mcp
    runtime.tools runtime.windows workflows.llm
workflows/standing_agents: runtime.llm runtime.windows workflows.llm
"""


def _allowed_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    source = ""
    for line in FEATURE_EDGES.strip().splitlines():
        if not line.startswith(" "):  # `source: targets`; an indented line goes on with them
            source, line = line.split(":")
        edges.setdefault(source, set()).update(line.split())
    return edges


def test_a_feature_reaches_another_only_along_a_listed_edge() -> None:
    allowed = _allowed_edges()
    found: dict[str, set[str]] = {}
    for layer in FEATURE_LAYERS:
        for folder in sorted(_folders(layer) - KERNEL_PACKAGES):
            for path in (ROOT / layer / folder).rglob("*.py"):
                found.setdefault(f"{layer}/{folder}", set()).update(_reached_features(path))
    new = sorted(
        f"{source} -> {target}"
        for source, targets in found.items()
        for target in targets - allowed.get(source, set())
    )
    assert not new, "edges not listed in FEATURE_EDGES:\n" + "\n".join(new)
    gone = sorted(
        f"{source} -> {target}"
        for source, targets in allowed.items()
        for target in targets - found.get(source, set())
    )
    assert not gone, "listed edges that no import uses any more (remove them):\n" + "\n".join(gone)


# What of each feature the others may import. Always (`ALWAYS_PUBLIC`, in any layer): its
# contracts (any `…contracts` module: names, payloads, activity contracts, and the
# approvals inbox's contract with the features that answer its kinds,
# api/approvals/contracts.py), views (the wire models it builds), errors (its refusals),
# dependencies (`deps`: the path bounds and gates another feature's route takes), the
# API's side of its workflows (`temporal_calls`: the one way another feature's route
# starts, signals, updates or wakes them), and the package itself (api/<f>/__init__.py's
# registration).
# Then the modules listed here, today's surface, written down so that reaching into another
# feature's internals is a decision. Shrink it by moving what others need into the
# feature's contracts or views; a new entry says "this module is now part of the
# feature's public face".
ALWAYS_PUBLIC = frozenset({"contracts", "views", "errors", "deps", "temporal_calls", "__init__"})


def _always_public(module: str) -> bool:
    top = module.split(".")[0]
    return top in ALWAYS_PUBLIC or top.endswith("_contracts")


PUBLIC_MODULES = """
activities/llm: gateway record scripted
activities/mcp: calls pool
runtime/agent_tools: models
runtime/approvals: answers binding ledger models projection
runtime/coding_tasks: coder_session models store
runtime/device_flow: providers tokens
runtime/investigation: catalog models outcomes research tools
runtime/llm: active attempt_log chain config_store cost_warning models preset_store reservation
runtime/mcp: config grants status
runtime/notifications: outbox
runtime/sessions: approval_modes models permissions prompts registry shell_allowlist streams
    tools
runtime/standing_agents: approvals coder_decisions control decision_queue expiry models queue
    registry_store
runtime/tenants: tokens
runtime/tools: results
runtime/windows: lease_client screenshots tools verbs
runtime/workspace: fence file_errors settings
workflows/device_flow: pause
workflows/llm: chain model_failure
workflows/windows: settlement
"""


def _public_modules() -> dict[str, set[str]]:
    public: dict[str, set[str]] = {}
    feature = ""
    for line in PUBLIC_MODULES.strip().splitlines():
        if not line.startswith(" "):
            feature, line = line.split(":")
        public.setdefault(feature, set()).update(line.split())
    return public


def _module_of(parts: list[str]) -> list[str] | None:
    """The longest prefix of an imported name that is a module of the repository."""
    for k in range(len(parts), 1, -1):
        candidate = ROOT.joinpath(*parts[:k])
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return parts[:k]
    return None


def _reached_modules(path: Path, own_feature: str) -> set[tuple[str, str]]:
    """(`layer/feature`, module within it) for each other feature's module `path` imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    reached = set()
    for name in names:
        parts = name.split(".")
        if len(parts) < 2 or parts[0] not in FEATURE_LAYERS or parts[1] == own_feature:
            continue
        if parts[1] in KERNEL_PACKAGES or parts[1] in API_ONLY:
            continue
        module = _module_of(parts)
        if module is None or not (ROOT / parts[0] / parts[1] / "__init__.py").is_file():
            continue
        reached.add((f"{parts[0]}/{parts[1]}", ".".join(module[2:]) or "__init__"))
    return reached


def test_a_feature_reaches_only_another_features_public_modules() -> None:
    public = _public_modules()
    found: dict[str, set[str]] = {}
    for layer in FEATURE_LAYERS:
        for folder in sorted(_folders(layer) - KERNEL_PACKAGES - API_ONLY):
            for path in (ROOT / layer / folder).rglob("*.py"):
                for feature, module in _reached_modules(path, folder):
                    if not _always_public(module):
                        found.setdefault(feature, set()).add(module)
    new = sorted(
        f"{feature}.{module}"
        for feature, modules in found.items()
        for module in modules - public.get(feature, set())
    )
    assert not new, "another feature's internals, not in PUBLIC_MODULES:\n" + "\n".join(new)
    gone = sorted(
        f"{feature}.{module}"
        for feature, modules in public.items()
        for module in modules - found.get(feature, set())
    )
    assert not gone, "public modules no other feature imports (remove them):\n" + "\n".join(gone)
