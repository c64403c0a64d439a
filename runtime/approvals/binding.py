"""An approval of a tool call is bound to exactly what it approves.

The call's digest is SHA-256 over the canonical JSON of its tool name and its exact
arguments (keys sorted, no insignificant whitespace, UTF-8, no NaN or infinity), written
`sha256:<64 hex digits>`. It is recorded when the call is proposed and shown to the human
with the preview; the answer that approves it records it (an answer may name the digest
its human saw, and is refused when the call no longer has it); and the call runs only if
the arguments it is about to run with still hash to the approved digest, so nothing
between the approval and the effect can change what runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final, Literal

from runtime.failures import WireError

DIGEST_PATTERN: Final = r"^sha256:[0-9a-f]{64}$"
# The reason a call whose arguments changed after their approval is not run.
DIGEST_MISMATCH: Final = "approval_digest_mismatch"


def canonical_json(value: Any) -> str:
    """The one JSON text of `value` that its digest is taken over."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def call_digest(tool: str, arguments: Mapping[str, Any]) -> str:
    """`sha256:<hex>` of the canonical JSON of `{"tool": tool, "arguments": arguments}`."""
    text = canonical_json({"tool": tool, "arguments": dict(arguments)})
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def still_approved(approved: str | None, tool: str, arguments: Mapping[str, Any]) -> bool:
    """Whether the call about to run is the one approved. `approved` is None only for an
    approval recorded before approvals carried a digest: nothing to compare."""
    return approved is None or call_digest(tool, arguments) == approved


class DigestMismatch(WireError):
    """An answer that names a digest the request does not carry: what its human saw is not
    what would run (the request changed, or the answer is for another one): 409."""

    kind: Literal["approval_digest_mismatch"] = "approval_digest_mismatch"
    decision_id: str
    expected: str | None
    given: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        what = (
            f"its call's digest is {self.expected}"
            if self.expected is not None
            else "it binds no call"
        )
        return {
            "error": f"This answer approves {self.given}, but {what}",
            "code": self.kind,
            "decisionId": self.decision_id,
            "expected": self.expected,
            "given": self.given,
        }
