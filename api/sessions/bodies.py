"""The JSON bodies of the session-daemon routes: the models that parse them.

A route reads its body with `read_body` (strict JSON, an object, `{}` when empty) and
validates it with `<Model>.parse` (a `DaemonBody`, api/requests.py), which answers the
spec's own 400 body for the first invalid field (`refusal`, a typed refusal: mostly
`InvalidRequest` with the field's code), never pydantic's messages. The two steps are
apart because some routes look the session up in between: an unknown session is a 404 even when the
body is invalid, while malformed JSON is a 400 before anything else. The bounds are
api/input_bounds' and runtime/sessions/contracts'; /openapi.json documents these
models (`api.openapi.json_body`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import ErrorDetails, PydanticCustomError

from api.input_bounds import MAX_DISPLAY_NAME_CHARS, MAX_ID_CHARS, MAX_PATH_CHARS
from api.requests import DaemonBody
from runtime.failures import InvalidRequest, WireError
from runtime.sessions.approval_modes import ApprovalMode
from runtime.sessions.contracts import MAX_DEADLINE_MS
from runtime.sessions.errors import WorkspaceMismatch
from runtime.wire import WireBody


def _str_or_none(value: Any) -> Any:
    return value if isinstance(value, str) else None


def _dict_or_none(value: Any) -> Any:
    return value if isinstance(value, dict) else None


# A field the route ignores unless it has the documented type (as the daemon always did).
LenientStr = Annotated[str | None, BeforeValidator(_str_or_none)]
LenientObject = Annotated[dict[str, Any] | None, BeforeValidator(_dict_or_none)]

INVALID_CWD = InvalidRequest(message="`cwd` must be an absolute path", code="invalid_cwd")


class CreateSessionBody(DaemonBody):
    cwd: str | None = Field(
        default=None,
        max_length=MAX_PATH_CHARS,
        pattern="^/",
        description="Absolute path; must be the daemon's workspace (else workspace_mismatch).",
    )
    session_scope: Literal["single", "thread"] = "single"

    @field_validator("cwd")
    @classmethod
    def _bound_workspace(cls, cwd: str | None, info: ValidationInfo) -> str | None:
        """With `context={"workspace": ...}`: a `cwd` naming another workspace is refused
        before `sessionScope` is looked at."""
        bound = (info.context or {}).get("workspace")
        if cwd is not None and bound is not None and (cwd.rstrip("/") or "/") != bound:
            raise PydanticCustomError(
                "workspace_mismatch", "workspace mismatch", {"bound": bound, "requested": cwd}
            )
        return cwd

    @classmethod
    def refusal(cls, error: ErrorDetails) -> WireError:
        if error["type"] == "workspace_mismatch":
            ctx = error.get("ctx", {})
            return WorkspaceMismatch(
                bound=ctx["bound"], requested=ctx["requested"].rstrip("/") or "/"
            )
        if error["loc"][:1] == ("cwd",):
            return INVALID_CWD
        return InvalidRequest(
            message='`sessionScope` must be "single" or "thread" when provided',
            code="invalid_session_scope",
        )


class RestoreBody(DaemonBody):
    # Not a string: ignored (the daemon's workspace is used).
    cwd: LenientStr = Field(default=None, max_length=MAX_PATH_CHARS)

    @classmethod
    def refusal(cls, error: ErrorDetails) -> WireError:
        return INVALID_CWD


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


DisplayName = Annotated[str, Field(max_length=MAX_DISPLAY_NAME_CHARS)]


class MetadataBody(WireBody):
    """The schema of PATCH /session/:id/metadata (the route checks the body itself, to
    answer the spec's errors). Unknown fields are a 400 naming the allowed ones."""

    # Optional but never null (null is a 400): omit it to read the name back.
    display_name: DisplayName | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=_no_default
    )


class ModelBody(DaemonBody):
    model_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)

    @classmethod
    def refusal(cls, error: ErrorDetails) -> WireError:
        return InvalidRequest(
            message=f"`modelId` must be a non-empty string of at most {MAX_ID_CHARS} characters",
            code="invalid_model_id",
        )


class ApprovalModeBody(DaemonBody):
    """The schema of POST /session/:id/approval-mode (the route checks `mode` itself, to
    answer `invalid_approval_mode` with the allowed list)."""

    mode: ApprovalMode
    persist: bool = False

    @classmethod
    def refusal(cls, error: ErrorDetails) -> WireError:
        return InvalidRequest(message="`persist` must be a boolean", code="invalid_persist_flag")


class ContentBlock(DaemonBody):
    """Any object is a block; only the text of `text` blocks and of resources is read."""

    type: LenientStr = Field(
        default=None, description='"text" blocks carry `text`; others may carry `resource`.'
    )
    text: LenientStr = None
    resource: LenientObject = None

    def prompt_text(self) -> str | None:
        if self.type == "text" and self.text is not None:
            return self.text
        if self.resource is not None and isinstance(self.resource.get("text"), str):
            text: str = self.resource["text"]
            return text
        return None


PROMPT_REQUIRED = "`prompt` is required and must be a non-empty array of content blocks"


class PromptBody(DaemonBody):
    prompt: list[ContentBlock] = Field(min_length=1)
    deadline_ms: int | None = Field(default=None, ge=1, le=MAX_DEADLINE_MS)

    def text(self) -> str:
        """The prompt's text: its text blocks and text resources, one per line."""
        parts = (block.prompt_text() for block in self.prompt)
        return "\n".join(part for part in parts if part is not None)

    @classmethod
    def refusal(cls, error: ErrorDetails) -> WireError:
        loc = error["loc"]
        if loc == ("prompt",):
            return InvalidRequest(message=PROMPT_REQUIRED)
        if loc[:1] == ("prompt",):
            return InvalidRequest(message="each `prompt` element must be an object (content block)")
        return InvalidRequest(
            message="`deadlineMs` must be a positive integer (milliseconds) "
            f"no greater than {MAX_DEADLINE_MS}",
            code="invalid_deadline_ms",
            details={"max": MAX_DEADLINE_MS},
        )


class VoteCancelled(DaemonBody):
    outcome: Literal["cancelled"]


class VoteSelected(DaemonBody):
    outcome: Literal["selected"]
    option_id: str = Field(max_length=MAX_ID_CHARS)


class VoteBody(DaemonBody):
    outcome: Annotated[VoteCancelled | VoteSelected, Field(discriminator="outcome")]
