"""What the session-daemon routes answer: one wire model (runtime/wire.py) per response
body, named in the spec's words; its snake_case fields go on the wire in the spec's
camelCase.

A field that the daemon omits rather than sends as null (`displayName` before a
session is named, `clientId` of an anonymous heartbeat) is `omittable`, and its
route drops it with `response_model_exclude_none`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from runtime.sessions.approval_modes import ApprovalMode
from runtime.sessions.views import ModesState
from runtime.wire import WireModel, omittable


class SessionCreated(WireModel):
    """POST /session: the session created, or the live one attached to."""

    session_id: str
    workspace_cwd: str
    attached: bool
    client_id: str
    created_at: str


class SessionSummary(WireModel):
    """One live session of GET /workspace/:id/sessions."""

    session_id: str
    workspace_cwd: str
    created_at: str
    client_count: int
    has_active_prompt: bool
    display_name: str | SkipJsonSchema[None] = omittable("Present once the session is named.")


class SessionList(WireModel):
    sessions: list[SessionSummary]


class SessionMetadata(WireModel):
    """PATCH /session/:id/metadata: the session's name (null until named)."""

    session_id: str
    display_name: str | None


class Heartbeat(WireModel):
    session_id: str
    client_id: str | SkipJsonSchema[None] = omittable("The `X-Qwen-Client-Id` that beat, if any.")
    last_seen_at: int = Field(description="Epoch milliseconds.")


class ModelSwitched(WireModel):
    model_id: str


class ApprovalModeSet(WireModel):
    session_id: str
    mode: ApprovalMode
    previous: ApprovalMode
    persisted: bool = Field(description="`tools.approvalMode` was written for new sessions.")


class ModelOption(WireModel):
    model_id: str
    name: str
    description: str | None


class ModelsState(WireModel):
    current_model_id: str
    available_models: list[ModelOption]


class ContextState(WireModel):
    """The session's models and approval modes (`state` of context, load and resume)."""

    models: ModelsState
    modes: ModesState
    config_options: list[dict[str, Any]]


class SessionContext(WireModel):
    """GET /session/:id/context."""

    v: Literal[1]
    session_id: str
    workspace_cwd: str
    state: ContextState


class SessionRestored(WireModel):
    """POST /session/:id/load and /resume."""

    session_id: str
    workspace_cwd: str
    attached: bool
    client_id: str
    state: ContextState


class PromptAccepted(WireModel):
    """202 of POST /session/:id/prompt: queued; follow it on the event stream."""

    prompt_id: str
    last_event_id: int = Field(description="The stream's last event id before this prompt.")
    event_epoch: str


class PromptEnded(WireModel):
    """200 of POST /session/:id/prompt with `Prefer: wait`: how the prompt's turn ended."""

    stop_reason: str


class PendingPrompt(WireModel):
    prompt_id: str
    text: str
    queued_at: int = Field(description="Epoch milliseconds.")
    state: Literal["running", "queued"]


class PendingPrompts(WireModel):
    """GET /session/:id/pending-prompts: the running prompt first, then the queue."""

    pending_prompts: list[PendingPrompt]


class VoteRecorded(WireModel):
    """A permission vote in history (an empty object): its outcome comes as events."""


class AvailableCommand(WireModel):
    name: str
    description: str
    input: dict[str, Any] | None
    # `_meta` is not the camelCase of a Python name: an explicit alias.
    meta: dict[str, Any] = Field(alias="_meta", serialization_alias="_meta")


class SupportedCommands(WireModel):
    v: Literal[1]
    session_id: str
    available_commands: list[AvailableCommand]
    available_skills: list[str]


class SessionTask(WireModel):
    kind: str
    id: str
    label: str
    description: str
    status: str
    start_time: int
    runtime_ms: int


class SessionTasks(WireModel):
    v: Literal[1]
    session_id: str
    now: int = Field(description="Epoch milliseconds.")
    tasks: list[SessionTask]


class SessionRecap(WireModel):
    session_id: str
    recap: str | None
