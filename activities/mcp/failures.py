"""Why an MCP server could not be reached or called, as the status routes say it
(`errorKind`, message, hint), and error text without credentials."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Final

from runtime.egress import redact_url
from runtime.mcp.config import McpServerConfig, ReferenceRefused
from runtime.mcp.status import McpErrorKind


class McpUnavailable(Exception):
    """A server could not be reached; `kind` is the status routes' errorKind."""

    def __init__(self, kind: McpErrorKind, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.kind: McpErrorKind = kind
        self.hint = hint


def root_cause(err: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio's task groups wrap what failed)."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return err


_URL_IN_TEXT: Final = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact(text: str) -> str:
    """`text` with every URL in it cut to scheme, host and path: no credentials, no
    query (an error message may quote the URL a server or the SDK was given)."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)).split("?", 1)[0].split("#")[0], text)


def classify(
    err: BaseException, config: McpServerConfig, secrets: Collection[str] = ()
) -> McpUnavailable:
    """What a failure shows: categorized, URLs without credentials, and none of the
    server's `env` or `headers` values (literal, or `secrets`: the resolved references)."""
    failure = _classify(err, config)
    text = redact(str(failure))
    hidden = {*config.secret_values(), *(v for v in secrets if len(v) >= 4)}
    for value in sorted(hidden, key=len, reverse=True):
        text = text.replace(value, "[redacted]")
    return McpUnavailable(failure.kind, text[:2000], failure.hint)


def _classify(err: BaseException, config: McpServerConfig) -> McpUnavailable:
    from activities.mcp.egress import egress_refused

    refused = egress_refused(err)
    if refused is not None:
        return McpUnavailable(
            "blocked_egress",
            refused.refusal.message,
            "point the server at an address agentrt may reach",
        )
    cause = root_cause(err)
    if isinstance(cause, McpUnavailable):
        return cause
    if isinstance(cause, ReferenceRefused):
        return McpUnavailable(
            "auth_env_error",
            str(cause),
            "set the variable in the worker's "
            "environment, or allow its name (AGENTRT_PROVIDER_KEY_ENVS)",
        )
    if isinstance(cause, FileNotFoundError | PermissionError) and config.command:
        return McpUnavailable(
            "missing_binary",
            f"cannot start {config.command!r}: {cause.strerror or cause}",
            "install the server's command, or fix `command` in mcpServers",
        )
    if isinstance(cause, TimeoutError):
        return McpUnavailable(
            "init_timeout",
            f"the server did not answer within {config.timeout_seconds:g} s",
            "raise `timeout` (ms) of this server, or check that it starts",
        )
    text = str(cause) or type(cause).__name__
    return McpUnavailable("protocol_error", text, "see the worker's log for the server's output")
