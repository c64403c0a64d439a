"""Typed failures across the Temporal boundary (DESIGN.md, "Errors across the Temporal
boundary").

A workflow, an update validator or an activity that refuses something raises
`ApplicationError(message, <WireError model>, type=<kind>, non_retryable=True)`
(`WireError.application_error()` builds it). The model is the error's whole meaning:
its `kind` names it, its fields carry what the client must be told, and its
`http_status` / `response_body()` / `response_headers()` are its wire answer. Each
model is defined next to the policy that refuses (the permission mediator, the
session's queue, a turn's authorization), so a wire body exists in one place only;
the API decodes the model (`decode_failure`) and answers with it, in one function
(`api.errors.workflow_error`).

Pure: no I/O, so workflows import it through `imports_passed_through`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, Field, JsonValue
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError

_KINDS: dict[str, type[WireError]] = {}


class WireError(BaseModel):
    """A refusal and its HTTP answer. Subclasses declare `kind: Literal["..."] = "..."`;
    the kind is the `ApplicationError.type` it travels under. `retryable`: whether an
    activity that meets it is retried (most refusals read the same on every attempt)."""

    retryable: ClassVar[bool] = False

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        field = cls.model_fields.get("kind")
        kind = field.default if field is not None else None
        if not isinstance(kind, str):
            return  # an abstract base (no kind of its own)
        known = _KINDS.get(kind)
        if known is not None and known.__qualname__ != cls.__qualname__:
            raise TypeError(f"two WireError models of kind {kind!r}: {known} and {cls}")
        _KINDS[kind] = cls

    @property
    def kind_name(self) -> str:
        """The model's `kind`: the `ApplicationError.type` it travels under."""
        kind = getattr(self, "kind", None)
        assert isinstance(kind, str), f"{type(self).__name__} declares no kind"
        return kind

    @property
    def http_status(self) -> int:
        """The HTTP status the API answers the refusal with (each kind defines it)."""
        raise NotImplementedError

    def response_body(self) -> dict[str, Any]:
        """The JSON body the API answers with (each kind defines it): its `error` is the
        message, and most kinds add a `code`."""
        raise NotImplementedError

    def response_headers(self) -> Mapping[str, str]:
        """Headers the answer carries besides the body's (none unless a kind adds some)."""
        return {}

    def application_error(
        self, message: str | None = None, *, retryable: bool | None = None
    ) -> ApplicationError:
        """The exception to raise in a workflow, validator or activity.

        Args:
            message: the error's message; None takes the body's `error` (or the kind).
            retryable: overrides the kind's own `retryable`.

        Returns:
            An `ApplicationError` of type `kind_name` that carries this model as its one
            detail.
        """
        text = message or str(self.response_body().get("error") or self.kind_name)
        again = self.retryable if retryable is None else retryable
        return ApplicationError(text, self, type=self.kind_name, non_retryable=not again)


def wire_error_kinds() -> Mapping[str, type[WireError]]:
    """Every kind a failure may carry, to the model that decodes it."""
    return dict(_KINDS)


W = TypeVar("W", bound="WireError")


def refusal_of(err: BaseException | None, family: type[W]) -> W | None:
    """The typed refusal `err` carries when it is one of `family`: how code that must
    handle one family of refusals (and let the others through) catches it.

    Args:
        err: any exception (or None); only an `ApplicationError` carries a refusal.
        family: a `WireError` class; a refusal of any of its subclasses is one of it.

    Returns:
        The decoded refusal, or None when `err` carries none of `family`.
    """
    failure = decode_failure(err)
    return failure if isinstance(failure, family) else None


def decode_failure(err: BaseException | None) -> WireError | None:
    """The typed model an `ApplicationError` carries, or None when it carries none.

    The details cross Temporal as JSON payloads of the pydantic converter. The client
    decodes them without type hints (plain dicts), so they are decoded again here,
    from the failure's payloads, with the model the error's type names.

    Returns:
        The model, or None when `err` is not an `ApplicationError`, its type names no
        known kind, or it has no details to read the kind's model from (a kind whose
        model has no required field is decoded from no details).
    """
    if not isinstance(err, ApplicationError) or err.type is None:
        return None
    model = _KINDS.get(err.type)
    if model is None:
        return None
    failure = err.failure
    if failure is not None and failure.application_failure_info.details.payloads:
        payloads = failure.application_failure_info.details.payloads[:1]
        (value,) = pydantic_data_converter.payload_converter.from_payloads(payloads, [model])
        if isinstance(value, model):
            return value
    if err.details and isinstance(err.details[0], Mapping):
        return model.model_validate(err.details[0])
    if err.details and isinstance(err.details[0], model):
        return err.details[0]
    if not err.details and not any(f.is_required() for f in model.model_fields.values()):
        return model()  # a kind whose model has no fields to send (raised without details)
    return None


class WorkerUnavailable(WireError):
    """No worker answered a query or an update within the API's bound: 503, retry."""

    kind: Literal["worker_unavailable"] = "worker_unavailable"

    @property
    def http_status(self) -> int:
        return 503

    def response_body(self) -> dict[str, Any]:
        return {"error": "No worker answered in time", "code": "worker_unavailable"}

    def response_headers(self) -> Mapping[str, str]:
        return {"Retry-After": "5"}


class UpdateExpired(WireError):
    """An update whose sender stopped waiting before a worker took it (its
    `accept_before_ms` has passed): the caller has answered 503 already, and the update's
    validator refuses it so that it never applies late. Answered as any worker that did
    not answer in time."""

    kind: Literal["update_expired"] = "update_expired"

    @property
    def http_status(self) -> int:
        return WorkerUnavailable().http_status

    def response_body(self) -> dict[str, Any]:
        return WorkerUnavailable().response_body()

    def response_headers(self) -> Mapping[str, str]:
        return WorkerUnavailable().response_headers()

    def application_error(
        self, message: str | None = None, *, retryable: bool | None = None
    ) -> ApplicationError:
        """As `WireError.application_error`; the message defaults to why it expired."""
        return super().application_error(
            message or "The caller stopped waiting for this update before a worker took it",
            retryable=retryable,
        )


class InvalidRequest(WireError):
    """A request whose shape is wrong (a field, a query parameter, a header): 400, with
    the rule it broke as `message`, the field's `code` (none for a few of the spec's own
    bodies) and the extra fields some bodies carry (`max`, `field`, ...), in order."""

    kind: Literal["invalid_request"] = "invalid_request"
    message: str
    code: str | None = None
    details: dict[str, JsonValue] = Field(default_factory=dict)

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.message}
        if self.code is not None:
            body["code"] = self.code
        return {**body, **self.details}


class RelayedRefusal(WireError):
    """A refusal passed on as the layer below stated it (a model-routing configuration
    refusal behind a session's model switch, the workspace fence's `FileError` behind
    `POST /workspace/init`): that layer's status, its code and its message, nothing more."""

    kind: Literal["relayed_refusal"] = "relayed_refusal"
    status: int
    code: str
    message: str

    @property
    def http_status(self) -> int:
        return self.status

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.code}


class TokenRequired(WireError):
    """A route that mutates state, on a daemon that runs without any bearer token
    (`Settings.token_configured` false): 401."""

    kind: Literal["token_required"] = "token_required"

    @property
    def http_status(self) -> int:
        return 401

    def response_body(self) -> dict[str, Any]:
        return {
            "code": self.kind_name,
            "error": "This route mutates state and requires a configured bearer token: "
            "restart the daemon with --token, AGENTRT_TOKEN or QWEN_SERVER_TOKEN "
            "(e.g. AGENTRT_TOKEN=secret make run)",
        }
