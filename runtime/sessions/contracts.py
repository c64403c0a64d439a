"""Payloads of SessionWorkflow's messages and activities (one typed input/output each)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

# The longest prompt deadline (`deadlineMs`, `--prompt-deadline-ms`): 2^31-1 ms, about
# 24.8 days, the longest delay JavaScript's setTimeout honours (the reference daemon's bound).
MAX_DEADLINE_MS = 2**31 - 1

StopReason = Literal["end_turn", "cancelled", "max_tokens", "error", "length", "refusal"]


class SessionInput(BaseModel):
    session_id: str
    workspace_cwd: str
    policy: str = "first-responder"
    permission_timeout_ms: int = 300_000
    max_pending_prompts: int = 5
    event_retention: int = 8000
    shell_enabled: bool = False
    model_id: str = "scripted"
    model_provider: str = "scripted"
    approval_mode: str = "default"
    max_steps: int = 16
    # Carried across continue-as-new.
    event_counter: int = 0
    always_allowed: list[str] = Field(default_factory=list)
    queue: list[PromptItem] = Field(default_factory=list)


class PromptItem(BaseModel):
    prompt_id: str
    text: str
    originator: str | None = None
    queued_at_ms: int = 0
    deadline_ms: int | None = None
    # Waited behind another prompt (pending_prompt_* events).
    queued: bool = False


class SubmitPrompt(BaseModel):
    item: PromptItem


class SubmitResult(BaseModel):
    position: int


class CancelRequest(BaseModel):
    originator: str | None = None
    # Only this prompt (a blocking caller that went away); None: the active prompt.
    prompt_id: str | None = None


class VoteRequest(BaseModel):
    request_id: str
    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None
    client_id: str | None = None
    is_local: bool = True
    eligible_voters: int = 1


class VoteResult(BaseModel):
    kind: Literal["resolved", "partial"]


class SetModeRequest(BaseModel):
    mode: str
    originator: str | None = None


class SetModelRequest(BaseModel):
    model_id: str
    originator: str | None = None


class ModelSwitchResult(BaseModel):
    ok: bool
    model_id: str
    error: str | None = None


class CloseRequest(BaseModel):
    closed_by: str | None = None


class PromptView(BaseModel):
    prompt_id: str
    text: str
    queued_at_ms: int
    state: Literal["running", "queued"]


class PermissionView(BaseModel):
    request_id: str
    prompt_id: str | None
    options: list[str]


class SessionStatus(BaseModel):
    session_id: str
    active_prompt: PromptView | None = None
    queued: list[PromptView] = Field(default_factory=list)
    pending_permissions: list[PermissionView] = Field(default_factory=list)
    approval_mode: str = "default"
    model_id: str = "scripted"
    closed: bool = False
    last_turn: dict[str, Any] | None = None


class ModelStepInput(BaseModel):
    session_id: str
    prompt_id: str
    step: int
    run_id: str
    user_text: str | None = None
    model_id: str
    shell_enabled: bool = False
    retention: int = 8000


class ModelToolCall(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ModelStepResult(BaseModel):
    content: str = ""
    tool_calls: list[ModelToolCall] = Field(default_factory=list)
    stop_reason: StopReason = "end_turn"


class ToolStepInput(BaseModel):
    session_id: str
    prompt_id: str
    workspace_cwd: str
    run_id: str
    call: ModelToolCall
    shell_enabled: bool = False
    retention: int = 8000
    # "run": execute and report; "refuse": report as failed without running.
    action: Literal["run", "refuse"] = "run"
    refusal: str | None = None


class ToolPreview(BaseModel):
    tool_call: dict[str, Any]
    kind: str


class ToolStepResult(BaseModel):
    status: Literal["completed", "failed"]


SessionInput.model_rebuild()
