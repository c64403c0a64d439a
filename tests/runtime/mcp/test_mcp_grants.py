"""Grants and mode entries of MCP tools (runtime/mcp/grants.py): a wildcard names one
server's tools by the server's real name, never a prefix shared by another server."""

from __future__ import annotations

import pytest

from runtime.mcp.contracts import qualified
from runtime.mcp.grants import matches, offered, pattern_problem, validate_patterns


@pytest.mark.parametrize(
    ("server", "expected"), [("a", True), ("a_", False), ("a__b", False), ("ab", False)]
)
def test_a_wildcard_names_its_servers_tools_only(server: str, expected: bool) -> None:
    name = qualified(server, "t")
    assert matches("mcp__a__*", name, server) is expected


def test_an_exact_entry_names_one_tool_and_an_unknown_server_only_exactly() -> None:
    assert matches("mcp__a__t", "mcp__a__t", "a")
    assert not matches("mcp__a__t", "mcp__a__u", "a")
    assert not matches("mcp__a__*", "mcp__a__t", None)
    assert matches("mcp__a__t", "mcp__a__t", None)


def test_a_tool_is_offered_only_when_the_mode_and_a_grant_both_name_it() -> None:
    assert offered(["mcp__a__*"], ["mcp__a__t"], "mcp__a__t", "a")
    assert not offered(["mcp__a__*"], [], "mcp__a__t", "a")
    assert not offered(["soa_send_message"], ["mcp__a__*"], "mcp__a__t", "a")


@pytest.mark.parametrize(
    "bad", ["soa_send_message", "mcp__a", "mcp____*", "mcp__a__b c", "mcp__" + "x" * 70 + "__*"]
)
def test_a_malformed_entry_is_refused(bad: str) -> None:
    assert pattern_problem(bad) is not None
    with pytest.raises(ValueError):
        validate_patterns([bad])
