"""Approvals' timeouts (issue 22): each timed kind's default, and the per-tool and per-mode
overrides (`AGENTRT_APPROVAL_TIMEOUT_OVERRIDES`) the approvals' clock gives a new request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from runtime.approvals import clock, ledger
from runtime.approvals.answers import may_answer
from runtime.approvals.ledger import ApprovalKind, ApprovalRequest
from runtime.settings import Settings
from runtime.store import Store

OVERRIDES = {"tool:mcp__files__write": 60_000, "mode:Incident": 600_000, "mode:Quiet": 0}


def _settings(**values: Any) -> Settings:
    return Settings(
        research_timeout_ms=86_400_000,
        decision_timeout_ms=604_800_000,
        mcp_approval_timeout_ms=3_600_000,
        approval_timeout_overrides=OVERRIDES,
        **values,
    )


@pytest.mark.parametrize(
    ("kind", "detail", "expected"),
    [
        # A tool's override wins over the mode's, the mode's over the kind's default.
        (
            ApprovalKind.MCP_CALL,
            {"call": {"tool": "mcp__files__write"}, "mode": "Incident"},
            60_000,
        ),
        (
            ApprovalKind.MCP_CALL,
            {"call": {"tool": "mcp__files__read"}, "mode": "Incident"},
            600_000,
        ),
        (ApprovalKind.MCP_CALL, {"call": {"tool": "mcp__files__read"}}, 3_600_000),
        (ApprovalKind.DECISION, {"mode": "Incident"}, 600_000),
        (ApprovalKind.DECISION, {"mode": "Quiet"}, 0),  # 0: none, stated
        (ApprovalKind.DECISION, {"mode": "Discovery"}, 604_800_000),
        (ApprovalKind.DECISION, {}, 604_800_000),
        # A coder's question and a research have no agent mode, and no tool of MCP.
        (ApprovalKind.CODER_QUESTION, {"mode": "Incident"}, 604_800_000),
        (ApprovalKind.RESEARCH, {"call": {"tool": "mcp__files__write"}}, 86_400_000),
    ],
)
def test_a_requests_timeout_is_its_tools_else_its_modes_else_its_kinds(
    kind: ApprovalKind, detail: dict[str, Any], expected: int
) -> None:
    assert clock.timeout_of(_settings(), kind, detail) == expected


def test_the_clock_gives_each_new_request_its_own_timeout(store: Store) -> None:
    created = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    requests: dict[str, tuple[dict[str, Any], int]] = {
        "write": ({"call": {"tool": "mcp__files__write"}, "mode": "Incident"}, 60_000),
        "incident": ({"mode": "Incident"}, 600_000),
        "quiet": ({"mode": "Quiet"}, 0),
    }
    with store.engine.begin() as connection:
        for ref, (detail, _) in requests.items():
            kind = ApprovalKind.MCP_CALL if "call" in detail else ApprovalKind.DECISION
            ledger.open_approval(
                connection,
                ApprovalRequest(
                    kind=kind,
                    ref=ref,
                    tenant="acme",
                    subject="agent/acme/soa",
                    asked_by="agent/acme/soa",
                    title=ref,
                    link="/x",
                    detail=detail,
                ),
                created,
            )
        assert clock.assign_timeouts(connection, _settings()) == 3
    with store.engine.connect() as connection:
        for ref, (detail, timeout) in requests.items():
            kind = ApprovalKind.MCP_CALL if "call" in detail else ApprovalKind.DECISION
            row = ledger.get_approval(connection, ledger.approval_id(kind, ref))
            assert row is not None
            assert row.timeout_ms == timeout
            expires = None if timeout == 0 else created + timedelta(milliseconds=timeout)
            assert (row.expires_at and row.expires_at.astimezone(UTC)) == expires


def test_overrides_alone_start_the_clock() -> None:
    assert not clock.enabled(
        Settings(research_timeout_ms=0, decision_timeout_ms=0, mcp_approval_timeout_ms=0)
    )
    assert clock.enabled(
        Settings(
            research_timeout_ms=0,
            decision_timeout_ms=0,
            mcp_approval_timeout_ms=0,
            approval_timeout_overrides={"mode:Incident": 1000},
        )
    )


@pytest.mark.parametrize(
    "overrides",
    [
        {"Incident": 1000},
        {"kind:decision": 1000},
        {"mode:": 1000},
        {"mode:Incident": -1},
        {"tool:t": 366 * 86_400_000},  # beyond a year: 0 says none
    ],
)
def test_an_override_names_a_tool_or_a_mode_and_a_timeout(overrides: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        Settings(approval_timeout_overrides=overrides)


def test_the_overrides_come_from_the_environment_as_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTRT_APPROVAL_TIMEOUT_OVERRIDES", '{"tool:mcp__files__write": 5000}')
    assert Settings().approval_timeout_overrides == {"tool:mcp__files__write": 5000}


def test_who_may_answer_which_kind() -> None:
    """The one table (runtime/approvals/answers.py): the administrator (None) every kind,
    a tenant's operator its tenant's kinds, a coder nothing."""
    for kind in ApprovalKind:
        assert may_answer(None, kind)
        assert not may_answer("coder", kind)
    tenant_kinds = {ApprovalKind.DECISION, ApprovalKind.MCP_CALL, ApprovalKind.CODER_QUESTION}
    assert {kind for kind in ApprovalKind if may_answer("operator", kind)} == tenant_kinds
