"""An approval of a tool call is bound to the call's digest (runtime/approvals/binding.py)."""

from __future__ import annotations

import hashlib

import pytest

from runtime.approvals.binding import (
    DigestMismatch,
    call_digest,
    canonical_json,
    still_approved,
)


def test_the_digest_is_sha256_over_the_canonical_json_of_tool_and_arguments() -> None:
    text = '{"arguments":{"a":1,"b":"é"},"tool":"t"}'
    assert canonical_json({"tool": "t", "arguments": {"b": "é", "a": 1}}) == text
    expected = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert call_digest("t", {"b": "é", "a": 1}) == expected
    assert call_digest("t", {"a": 1, "b": "é"}) == expected  # key order is not the call


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("t2", {"a": 1, "b": "é"}),
        ("t", {"a": 2, "b": "é"}),
        ("t", {"a": 1, "b": "é", "c": None}),
        ("t", {"a": 1.0, "b": "é"}),
        ("t", {"a": "1", "b": "é"}),
        ("t", {"a": 1, "b": "e"}),
    ],
)
def test_any_other_tool_or_argument_is_another_digest(
    tool: str, arguments: dict[str, object]
) -> None:
    assert call_digest(tool, arguments) != call_digest("t", {"a": 1, "b": "é"})
    assert not still_approved(call_digest("t", {"a": 1, "b": "é"}), tool, arguments)


def test_where_the_call_goes_is_part_of_it() -> None:
    mcp = {"server": "tickets", "serverTool": "create"}
    digest = call_digest("mcp__tickets__create", {"a": 1}, **mcp)
    assert digest != call_digest("mcp__tickets__create", {"a": 1})
    assert not still_approved(
        digest, "mcp__tickets__create", {"a": 1}, server="tickets", serverTool="delete"
    )
    assert still_approved(digest, "mcp__tickets__create", {"a": 1}, **mcp)


def test_a_lone_surrogate_is_hashed_not_refused() -> None:
    assert call_digest("t", {"a": "\ud800"}) != call_digest("t", {"a": "\ud801"})


def test_an_approval_without_a_digest_predates_them() -> None:
    assert still_approved(None, "t", {"anything": True})
    assert still_approved(call_digest("t", {}), "t", {})


def test_a_value_json_cannot_say_has_no_digest() -> None:
    with pytest.raises(ValueError):
        call_digest("t", {"x": float("nan")})


def test_the_refusal_of_an_answer_for_another_call() -> None:
    refusal = DigestMismatch(decision_id="d1", expected=None, given="sha256:" + "0" * 64)
    assert refusal.http_status == 409
    assert refusal.response_body()["code"] == "approval_digest_mismatch"
    assert "it binds no call" in refusal.response_body()["error"]
