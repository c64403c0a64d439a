"""The JSON bodies of the session-daemon routes, for /openapi.json.

The routes parse these bodies themselves (`read_body`) to answer the spec's exact
error bodies, so these models only document them; the bounds are the ones the
routes enforce (api/input_bounds, runtime/sessions/contracts).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from api.input_bounds import MAX_DISPLAY_NAME_CHARS, MAX_ID_CHARS, MAX_PATH_CHARS
from runtime.policy.approval import APPROVAL_MODES
from runtime.sessions.contracts import MAX_DEADLINE_MS


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")


class CreateSessionBody(_Body):
    cwd: str | None = Field(
        default=None,
        max_length=MAX_PATH_CHARS,
        description="Absolute path; must be the daemon's workspace (else workspace_mismatch).",
    )
    sessionScope: Literal["single", "thread"] = "single"


class RestoreBody(_Body):
    cwd: str | None = Field(default=None, max_length=MAX_PATH_CHARS)


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class MetadataBody(BaseModel):
    # Unknown fields are a 400 naming the allowed ones (api/routes/sessions.METADATA_FIELDS).
    model_config = ConfigDict(extra="forbid")

    # Optional but never null (null is a 400): omit it to read the name back.
    displayName: str | SkipJsonSchema[None] = Field(
        default=None,
        max_length=MAX_DISPLAY_NAME_CHARS,
        json_schema_extra=_no_default,
    )


class ModelBody(_Body):
    modelId: str = Field(min_length=1, max_length=MAX_ID_CHARS)


class ApprovalModeBody(_Body):
    mode: str = Field(json_schema_extra={"enum": list(APPROVAL_MODES)})


class ContentBlock(_Body):
    type: str = Field(description='"text" blocks carry `text`; others may carry `resource`.')
    text: str | None = None
    resource: dict[str, Any] | None = None


class PromptBody(_Body):
    prompt: list[ContentBlock] = Field(min_length=1)
    deadlineMs: int | None = Field(default=None, ge=1, le=MAX_DEADLINE_MS)


class VoteOutcome(_Body):
    outcome: Literal["selected", "cancelled"]
    optionId: str | None = Field(
        default=None, max_length=MAX_ID_CHARS, description='Required when "selected".'
    )


class VoteBody(_Body):
    outcome: VoteOutcome
