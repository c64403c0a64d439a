"""What the session-daemon routes answer: one model per response body, named in the
spec's words, with the spec's camelCase field names as they go on the wire.

A field that the daemon omits rather than sends as null (`displayName` before a
session is named, `clientId` of an anonymous heartbeat) is `omittable`, and its
route drops it with `response_model_exclude_none`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from api.openapi import omittable
from runtime.policy.approval import ApprovalMode


class SessionCreated(BaseModel):
    """POST /session: the session created, or the live one attached to."""

    sessionId: str
    workspaceCwd: str
    attached: bool
    clientId: str
    createdAt: str


class SessionSummary(BaseModel):
    """One live session of GET /workspace/:id/sessions."""

    sessionId: str
    workspaceCwd: str
    createdAt: str
    clientCount: int
    hasActivePrompt: bool
    displayName: str | SkipJsonSchema[None] = omittable("Present once the session is named.")


class SessionList(BaseModel):
    sessions: list[SessionSummary]


class SessionMetadata(BaseModel):
    """PATCH /session/:id/metadata: the session's name (null until named)."""

    sessionId: str
    displayName: str | None


class Heartbeat(BaseModel):
    sessionId: str
    clientId: str | SkipJsonSchema[None] = omittable("The `X-Qwen-Client-Id` that beat, if any.")
    lastSeenAt: int = Field(description="Epoch milliseconds.")


class ModelSwitched(BaseModel):
    modelId: str


class ApprovalModeSet(BaseModel):
    sessionId: str
    mode: ApprovalMode
    previous: ApprovalMode
    persisted: bool = Field(description="`tools.approvalMode` was written for new sessions.")


class ModelOption(BaseModel):
    modelId: str
    name: str
    description: str | None


class ModelsState(BaseModel):
    currentModelId: str
    availableModels: list[ModelOption]


class ModeOption(BaseModel):
    id: ApprovalMode
    name: str
    description: str


class ModesState(BaseModel):
    currentModeId: str
    availableModes: list[ModeOption]


class ContextState(BaseModel):
    """The session's models and approval modes (`state` of context, load and resume)."""

    models: ModelsState
    modes: ModesState
    configOptions: list[dict[str, Any]]


class SessionContext(BaseModel):
    """GET /session/:id/context."""

    v: Literal[1]
    sessionId: str
    workspaceCwd: str
    state: ContextState


class SessionRestored(BaseModel):
    """POST /session/:id/load and /resume."""

    sessionId: str
    workspaceCwd: str
    attached: bool
    clientId: str
    state: ContextState


class PromptAccepted(BaseModel):
    """202 of POST /session/:id/prompt: queued; follow it on the event stream."""

    promptId: str
    lastEventId: int = Field(description="The stream's last event id before this prompt.")
    eventEpoch: str


class PromptEnded(BaseModel):
    """200 of POST /session/:id/prompt with `Prefer: wait`: how the prompt's turn ended."""

    stopReason: str


class PendingPrompt(BaseModel):
    promptId: str
    text: str
    queuedAt: int = Field(description="Epoch milliseconds.")
    state: Literal["running", "queued"]


class PendingPrompts(BaseModel):
    """GET /session/:id/pending-prompts: the running prompt first, then the queue."""

    pendingPrompts: list[PendingPrompt]


class VoteRecorded(BaseModel):
    """A permission vote in history (an empty object): its outcome comes as events."""
