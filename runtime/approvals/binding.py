"""An approval of a tool call is bound to exactly what it approves.

The call's digest is SHA-256 over the canonical JSON of what the call is: its tool name,
its exact arguments and, for an MCP call, the server and the server's own tool it is sent
to (keys sorted, no insignificant whitespace, UTF-8, no NaN or infinity), written
`sha256:<64 hex digits>`. It is recorded when the call is proposed and shown to the human
with the preview; the answer that approves it records the digest of the call as it stands
then (an answer may name the digest its human saw, and is refused when the call no longer
has it); and the call runs only if what it is about to run still hashes to the approved
digest, so a change of the recorded call between the approval and the effect (another
writer, a bug) never runs. The digest is not a signature: whoever can write the store can
rewrite a call and its digest alike.

The canonical form is Python's `json.dumps` of the stored JSON values (an integer stays an
integer, `1.0` stays `1.0`), not RFC 8785: a client echoes the digest it was shown rather
than recomputing it.
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


def call_digest(tool: str, arguments: Mapping[str, Any], **target: str) -> str:
    """`sha256:<hex>` of the canonical JSON of `{"tool", "arguments", **target}` (`target`:
    where the call goes, e.g. an MCP call's `server` and `serverTool`). A lone surrogate
    in a string is hashed as it is (never an error)."""
    text = canonical_json({**target, "tool": tool, "arguments": dict(arguments)})
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def still_approved(
    approved: str | None, tool: str, arguments: Mapping[str, Any], **target: str
) -> bool:
    """Whether the call about to run is the one approved. `approved` is None only for an
    approval answered before approvals recorded a digest (every approval of a call
    records one since): nothing to compare."""
    return approved is None or call_digest(tool, arguments, **target) == approved


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
