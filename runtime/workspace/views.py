"""What a client reads of the workspace's status, as wire models (runtime/wire.py): the
spec's status cell (DaemonStatusCell) and the cells of GET /workspace/env, built once by
`runtime.workspace.status.env_cells` and served as they are by the route
(api/workspace/status.py). Optional fields the daemon omits are `omittable`
(runtime/wire.py): absent from the body (their routes drop None), never `null`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic.json_schema import SkipJsonSchema

from runtime.wire import WireModel, omittable

CellStatus = Literal["ok", "warning", "error", "disabled", "not_started", "unknown"]
ErrorKind = Literal[
    "budget_exhausted",
    "missing_binary",
    "blocked_egress",
    "auth_env_error",
    "init_timeout",
    "protocol_error",
    "missing_file",
    "parse_error",
]


class StatusCell(WireModel):
    """The spec's DaemonStatusCell."""

    kind: str
    status: CellStatus
    error: str | SkipJsonSchema[None] = omittable("What went wrong (status error/warning).")
    error_kind: ErrorKind | SkipJsonSchema[None] = omittable("The category of the failure.")
    hint: str | SkipJsonSchema[None] = omittable("How to fix it.")


class EnvCell(StatusCell):
    """A cell of GET /workspace/env: `env_var` cells never carry a value."""

    kind: Literal["runtime", "platform", "memory", "sandbox", "proxy", "env_var"]
    name: str
    present: bool | SkipJsonSchema[None] = omittable("Whether the variable is set.")
    value: str | SkipJsonSchema[None] = omittable(
        "runtime/platform: the version; proxy: host:port only; never for env_var."
    )


class PreflightCell(StatusCell):
    locality: Literal["daemon", "acp"]
    detail: dict[str, Any] | SkipJsonSchema[None] = omittable("Cell-specific facts.")
