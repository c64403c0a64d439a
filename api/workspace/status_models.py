"""What the workspace status routes answer (spec session-daemon-http-protocol, "Read-only
runtime status routes" and "Mutation: approval, tools, init"): one wire model per body
(runtime/wire.py: snake_case here, the spec's camelCase on the wire). The status cell and
the cells of GET /workspace/env are built in runtime/ (runtime/workspace/views.py).
Optional fields the daemon omits are `omittable` and their routes drop them with
`response_model_exclude_none`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from runtime.sessions.approval_modes import ApprovalMode
from runtime.wire import WireModel, omittable
from runtime.workspace.views import CellStatus, EnvCell, PreflightCell


class WorkspaceEnv(WireModel):
    v: Literal[1]
    workspace_cwd: str
    initialized: bool
    acp_channel_live: bool
    cells: list[EnvCell]


class WorkspacePreflight(WireModel):
    v: Literal[1]
    workspace_cwd: str
    initialized: bool
    acp_channel_live: bool
    cells: list[PreflightCell]


class ProviderModel(WireModel):
    model_id: str
    base_model_id: str
    name: str
    description: str | None
    context_limit: int | None
    is_current: bool
    is_runtime: bool


class ModelProvider(WireModel):
    kind: Literal["model_provider"]
    status: CellStatus
    auth_type: str
    current: bool
    models: list[ProviderModel]


class CurrentModel(WireModel):
    auth_type: str
    model_id: str


class WorkspaceProviders(WireModel):
    v: Literal[1]
    workspace_cwd: str
    initialized: bool
    acp_channel_live: bool
    current: CurrentModel
    approval_mode: ApprovalMode = Field(
        description="The mode new sessions start in (the persisted `tools.approvalMode`)."
    )
    providers: list[ModelProvider]
    device_flow_providers: list[dict[str, Any]] = Field(
        description="OAuth device-flow providers and whether credentials are present "
        "(filled in by the device-flow work; empty here)."
    )


class Skill(WireModel):
    kind: Literal["skill"]
    status: CellStatus
    name: str
    description: str
    level: Literal["project", "user", "extension", "bundled"]
    model_invocable: bool
    argument_hint: str | SkipJsonSchema[None] = omittable("The arguments the skill takes.")


class WorkspaceSkills(WireModel):
    v: Literal[1]
    workspace_cwd: str
    initialized: bool
    skills: list[Skill]


class ToolToggled(WireModel):
    tool_name: str
    enabled: bool


class WorkspaceInitialized(WireModel):
    path: str
    action: Literal["created", "noop", "overwrote"]
