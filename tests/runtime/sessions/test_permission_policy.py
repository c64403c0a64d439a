"""Permission-vote mediation policy (pure): every policy, the body validator, the options.

The refusals' bodies are what the vote routes send (the routes answer with
`response_body()`); the 400 and 404 texts are the reference recordings' of qwen serve
0.24.4 (A_tokenless 053-069), the options the SSE capture 085's.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter

from api.input_bounds import MAX_ID_CHARS
from runtime import failures
from runtime.sessions import permission_options, permissions, vote_body
from runtime.sessions.permission_options import (
    default_options,
    shell_scope_label,
)
from runtime.sessions.permissions import (
    CANCEL_SENTINEL,
    INVALID_OUTCOME_ERROR,
    POLICIES,
    RESERVED_POLICIES,
    Forbidden,
    InvalidOption,
    Mediation,
    NotPending,
    PartialVote,
    PendingPermission,
    PermissionOption,
    PolicyNotImplemented,
    Resolved,
    SentinelCollision,
    Vote,
    consensus_quorum,
    mediate,
    not_found_body,
)
from runtime.sessions.vote_body import (
    OutcomeError,
    VoteOutcome,
    validate_outcome_body,
)

REQUEST_ID = "2c6b3cac-2354-4947-a60f-0d575451f11e"
SESSION_ID = "737e3da3-cfd5-4102-98df-63d2b3d2cfa0"
PROMPT_ID = "7fdb6305-e55c-4b58-b63e-0e8cb94c90ef"

# The options of the recorded permission_request frames (findings_A.json perm1 / perm2).
EDIT_OPTIONS: list[dict[str, str]] = [
    {"optionId": "proceed_always", "name": "Allow All Edits", "kind": "allow_always"},
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
]
SHELL_OPTIONS: list[dict[str, str]] = [
    {
        "optionId": "proceed_always_project",
        "name": "Always Allow in project: touch *",
        "kind": "allow_always",
    },
    {
        "optionId": "proceed_always_user",
        "name": "Always Allow for user: touch *",
        "kind": "allow_always",
    },
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
]

ALL_POLICY_LITERALS = [*POLICIES, *RESERVED_POLICIES]


def pending(
    policy: Any = "first-responder",
    *,
    designated: str | None = None,
    m: int = 1,
    voters_at_issue: list[str] | None = None,
    votes: dict[str, str] | None = None,
    options: list[dict[str, str]] | None = None,
) -> PendingPermission:
    base = PendingPermission(
        request_id=REQUEST_ID,
        session_id=SESSION_ID,
        prompt_id=PROMPT_ID,
        options=[PermissionOption(**o) for o in (options or EDIT_OPTIONS)],
        policy="first-responder",
        designated_client_id=designated,
        eligible_voters=m,
        voters_at_issue=voters_at_issue,
        votes=votes or {},
    )
    # model_copy does not validate: it lets a test hand `mediate` any policy string.
    return base.model_copy(update={"policy": policy})


def select(
    option_id: str | None = "proceed_once", client: str | None = None, local: bool = True
) -> Vote:
    return Vote(client_id=client, is_local=local, outcome="selected", option_id=option_id)


def cancel(client: str | None = None, local: bool = True) -> Vote:
    return Vote(client_id=client, is_local=local, outcome="cancelled")


# --------------------------------------------------------------------------- advertising


def test_modes_advertised_are_the_four_of_the_spec() -> None:
    assert POLICIES == ("first-responder", "designated", "consensus", "local-only")
    assert not set(RESERVED_POLICIES) & set(POLICIES)
    # A reserved literal is part of the schema: it validates.
    assert (
        PendingPermission.model_validate(
            {
                "request_id": "r",
                "session_id": "s",
                "prompt_id": None,
                "options": EDIT_OPTIONS,
                "policy": RESERVED_POLICIES[0],
            }
        ).policy
        == (RESERVED_POLICIES[0])
    )


# --------------------------------------------------------------------------- first-responder


def test_first_responder_first_valid_vote_resolves_with_the_recorded_frame() -> None:
    result = mediate(pending(), select("proceed_once"))  # 061_perm_vote_ok
    assert isinstance(result, Resolved)
    assert result.acp_outcome() == {"outcome": "selected", "optionId": "proceed_once"}
    assert result.by_client_id is None


def test_selecting_the_reject_option_is_a_selection_not_a_cancel() -> None:
    # 066_session_perm_vote_reject: optionId "cancel" resolves as selected/cancel.
    result = mediate(pending(options=SHELL_OPTIONS), select("cancel"))
    assert isinstance(result, Resolved)
    assert (result.outcome, result.option_id) == ("selected", "cancel")
    assert result.acp_outcome() == {"outcome": "selected", "optionId": "cancel"}


def test_a_named_voter_is_stamped_on_the_resolved_frame() -> None:
    result = mediate(pending(), select("proceed_always", client="alice", local=False))
    assert isinstance(result, Resolved)
    assert result.by_client_id == "alice"


# --------------------------------------------------------------------------- designated

DESIGNATED_TABLE = [
    # designated, voter, local, expected kind
    pytest.param("alice", "alice", True, "resolved", id="match"),
    pytest.param("alice", "alice", False, "resolved", id="match-remote"),
    pytest.param("alice", "bob", True, "forbidden", id="mismatch"),
    pytest.param("alice", None, True, "forbidden", id="anonymous-voter"),
    pytest.param(None, "bob", True, "resolved", id="no-designee-first-responder"),
    pytest.param(None, None, False, "resolved", id="no-designee-anonymous"),
]


@pytest.mark.parametrize(("designated", "voter", "local", "expected"), DESIGNATED_TABLE)
def test_designated(designated: str | None, voter: str | None, local: bool, expected: str) -> None:
    result = mediate(
        pending("designated", designated=designated), select(client=voter, local=local)
    )
    assert result.kind == expected
    if isinstance(result, Forbidden):
        assert result.reason == "designated_mismatch"
        assert result.http_status == 403
        assert result.response_body() == {
            "error": "The permission policy rejected this vote",
            "code": "permission_forbidden",
            "reason": "designated_mismatch",
            "requestId": REQUEST_ID,
            "sessionId": SESSION_ID,
        }
        assert result.client_id == voter
    else:
        assert isinstance(result, Resolved)
        assert result.by_client_id == voter


# --------------------------------------------------------------------------- local-only

LOCAL_ONLY_TABLE = [
    pytest.param(True, None, "resolved", id="loopback-anonymous"),
    pytest.param(True, "alice", "resolved", id="loopback-named"),
    pytest.param(False, None, "forbidden", id="remote-anonymous"),
    pytest.param(False, "alice", "forbidden", id="remote-named"),
]


@pytest.mark.parametrize(("local", "voter", "expected"), LOCAL_ONLY_TABLE)
def test_local_only(local: bool, voter: str | None, expected: str) -> None:
    result = mediate(pending("local-only"), select(client=voter, local=local))
    assert result.kind == expected
    if isinstance(result, Forbidden):
        assert result.reason == "remote_not_allowed"
        assert result.response_body()["code"] == "permission_forbidden"
        assert result.response_body()["reason"] == "remote_not_allowed"


# --------------------------------------------------------------------------- consensus


@pytest.mark.parametrize(("m", "quorum"), [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (0, 1)])
def test_consensus_quorum_is_floor_half_plus_one(m: int, quorum: int) -> None:
    assert consensus_quorum(pending("consensus", m=m)) == quorum


@pytest.mark.parametrize(("m", "quorum"), [(1, 1), (2, 2), (3, 2), (4, 3)])
def test_consensus_resolves_when_quorum_agrees(m: int, quorum: int) -> None:
    state = pending("consensus", m=m)
    for i in range(quorum):
        result = mediate(state, select("proceed_once", client=f"c{i}"))
        if i + 1 < quorum:
            assert isinstance(result, PartialVote)
            assert (result.votes, result.quorum, result.votes_needed) == (
                i + 1,
                quorum,
                quorum - i - 1,
            )
            assert result.option_tallies == {"proceed_once": i + 1}
            assert result.updated.votes == {f"c{j}": "proceed_once" for j in range(i + 1)}
            assert result.event is not None
            assert result.event.type == "permission_partial_vote"
            assert result.event.data == {
                "requestId": REQUEST_ID,
                "sessionId": SESSION_ID,
                "votesReceived": i + 1,
                "votesNeeded": quorum - i - 1,
                "quorum": quorum,
                "optionTallies": {"proceed_once": i + 1},
            }
            state = result.updated
        else:
            assert isinstance(result, Resolved)
            assert (result.outcome, result.option_id) == ("selected", "proceed_once")
            assert result.by_client_id == f"c{i}"


def test_consensus_votes_for_different_options_do_not_add_up() -> None:
    state = pending("consensus", m=3)  # quorum 2
    first = mediate(state, select("proceed_once", client="a"))
    assert isinstance(first, PartialVote)
    second = mediate(first.updated, select("cancel", client="b"))
    assert isinstance(second, PartialVote)
    assert second.votes == 2
    assert second.votes_needed == 1
    assert second.option_tallies == {"proceed_once": 1, "cancel": 1}
    third = mediate(second.updated, select("cancel", client="c"))
    assert isinstance(third, Resolved)
    assert third.option_id == "cancel"


def test_consensus_later_vote_replaces_the_earlier_one() -> None:
    state = pending("consensus", m=3)  # quorum 2
    first = mediate(state, select("proceed_once", client="a"))
    assert isinstance(first, PartialVote)
    changed = mediate(first.updated, select("cancel", client="a"))
    assert isinstance(changed, PartialVote)
    assert changed.updated.votes == {"a": "cancel"}
    assert changed.option_tallies == {"cancel": 1}
    assert changed.votes == 1
    # b's proceed_once does not meet a's withdrawn proceed_once.
    other = mediate(changed.updated, select("proceed_once", client="b"))
    assert isinstance(other, PartialVote)
    assert other.option_tallies == {"cancel": 1, "proceed_once": 1}


def test_consensus_repeating_a_vote_does_not_count_twice() -> None:
    state = pending("consensus", m=3)
    first = mediate(state, select("proceed_once", client="a"))
    assert isinstance(first, PartialVote)
    again = mediate(first.updated, select("proceed_once", client="a"))
    assert isinstance(again, PartialVote)
    assert (again.votes, again.option_tallies) == (1, {"proceed_once": 1})


def test_consensus_split_of_two_waits_until_a_voter_changes_side() -> None:
    state = pending("consensus", m=2)  # quorum 2: unanimity
    a = mediate(state, select("proceed_once", client="a"))
    assert isinstance(a, PartialVote)
    b = mediate(a.updated, select("cancel", client="b"))
    assert isinstance(b, PartialVote)
    assert (b.votes, b.votes_needed) == (2, 1)
    a_switches = mediate(b.updated, select("cancel", client="a"))
    assert isinstance(a_switches, Resolved)
    assert (a_switches.option_id, a_switches.by_client_id) == ("cancel", "a")


def test_consensus_needs_an_identified_voter() -> None:
    result = mediate(pending("consensus", m=1), select(client=None))
    assert isinstance(result, Forbidden)
    assert result.reason == "designated_mismatch"
    assert result.client_id is None


def test_consensus_snapshot_decides_eligibility_and_m() -> None:
    state = pending("consensus", m=1, voters_at_issue=["a", "b", "c"])
    assert consensus_quorum(state) == 2
    outsider = mediate(state, select(client="mallory"))
    assert isinstance(outsider, Forbidden)
    assert outsider.reason == "designated_mismatch"
    first = mediate(state, select(client="a"))
    assert isinstance(first, PartialVote)
    assert isinstance(mediate(first.updated, select(client="c")), Resolved)


def test_consensus_partial_vote_stamps_the_prompt_originator() -> None:
    result = mediate(pending("consensus", m=3, designated="owner"), select(client="a"))
    assert isinstance(result, PartialVote)
    assert result.event is not None
    assert result.event.originator_client_id == "owner"
    assert result.event.prompt_id == PROMPT_ID


def test_mediate_never_mutates_its_input() -> None:
    state = pending("consensus", m=3, votes={"a": "cancel"})
    before = state.model_dump()
    result = mediate(state, select("proceed_once", client="b"))
    assert isinstance(result, PartialVote)
    assert state.model_dump() == before
    assert result.updated.votes == {"a": "cancel", "b": "proceed_once"}


# --------------------------------------------------------------------------- cancel everywhere

CANCEL_VOTERS = [
    pytest.param(None, True, id="loopback-anonymous"),
    pytest.param(None, False, id="remote-anonymous"),
    pytest.param("stranger", False, id="remote-not-designated"),
]


@pytest.mark.parametrize("policy", [*ALL_POLICY_LITERALS, "no-such-policy"])
@pytest.mark.parametrize(("voter", "local"), CANCEL_VOTERS)
def test_cancel_resolves_under_every_policy(policy: str, voter: str | None, local: bool) -> None:
    state = pending(policy, designated="owner", m=4, voters_at_issue=["owner", "x", "y", "z"])
    result = mediate(state, cancel(client=voter, local=local))
    assert isinstance(result, Resolved)
    assert (result.outcome, result.option_id) == ("cancelled", None)
    assert result.acp_outcome() == {"outcome": "cancelled"}
    assert result.by_client_id == voter


# --------------------------------------------------------------------------- invalid options


@pytest.mark.parametrize("policy", ALL_POLICY_LITERALS)
def test_unknown_option_is_400_before_any_policy_check(policy: str) -> None:
    # 057_perm_vote_bad_option, even from a voter the policy would refuse.
    state = pending(policy, designated="owner")
    result = mediate(state, select("definitely_not_an_option", client="stranger", local=False))
    assert isinstance(result, InvalidOption)
    assert result.http_status == 400
    assert result.response_body() == {
        "error": (
            f'Permission {REQUEST_ID}: optionId "definitely_not_an_option" '
            "is not in the set of options the agent offered."
        ),
        "code": "invalid_option_id",
        "requestId": REQUEST_ID,
        "optionId": "definitely_not_an_option",
    }


@pytest.mark.parametrize("option_id", [None, "", CANCEL_SENTINEL, "PROCEED_ONCE"])
def test_missing_or_forged_option_is_invalid(option_id: str | None) -> None:
    result = mediate(pending(), select(option_id))
    assert isinstance(result, InvalidOption)
    assert result.option_id == option_id
    body = result.response_body()
    assert (body["code"], body["optionId"], body["requestId"]) == (
        "invalid_option_id",
        option_id,
        REQUEST_ID,
    )


# --------------------------------------------------------------------------- sentinel / 501


@pytest.mark.parametrize("vote", [select("proceed_once"), select(CANCEL_SENTINEL), cancel()])
def test_sentinel_in_the_agent_options_is_a_500(vote: Vote) -> None:
    options = [*EDIT_OPTIONS, {"optionId": CANCEL_SENTINEL, "name": "x", "kind": "reject_once"}]
    result = mediate(pending(options=options), vote)
    assert isinstance(result, SentinelCollision)
    assert result.http_status == 500
    assert result.response_body() == {
        "error": "The agent offered the reserved cancel sentinel",
        "code": "cancel_sentinel_collision",
        "requestId": REQUEST_ID,
    }
    assert permissions.has_sentinel_collision([PermissionOption(**o) for o in options])
    assert not permissions.has_sentinel_collision([PermissionOption(**o) for o in EDIT_OPTIONS])


@pytest.mark.parametrize("policy", [*RESERVED_POLICIES, "no-such-policy"])
def test_policy_without_a_branch_is_a_501(policy: str) -> None:
    result = mediate(pending(policy), select("proceed_once", client="a"))
    assert isinstance(result, PolicyNotImplemented)
    assert result.http_status == 501
    assert result.response_body() == {
        "error": "Permission policy not implemented",
        "code": "permission_policy_not_implemented",
        "policy": policy,
    }


# --------------------------------------------------------------------------- the whole table

# policy, designated, M, voter, local, expected kind (a single selected vote, fresh state)
POLICY_TABLE = [
    ("first-responder", None, 1, None, True, "resolved"),
    ("first-responder", None, 1, "bob", False, "resolved"),
    ("designated", "alice", 1, "alice", False, "resolved"),
    ("designated", "alice", 1, "bob", True, "forbidden"),
    ("designated", None, 1, "bob", False, "resolved"),
    ("consensus", None, 1, "a", False, "resolved"),
    ("consensus", None, 2, "a", True, "partial_vote"),
    ("consensus", None, 3, "a", True, "partial_vote"),
    ("consensus", None, 3, None, True, "forbidden"),
    ("local-only", None, 1, None, True, "resolved"),
    ("local-only", None, 1, "alice", False, "forbidden"),
    ("unanimous", None, 1, "a", True, "policy_not_implemented"),
]


@pytest.mark.parametrize(("policy", "designated", "m", "voter", "local", "expected"), POLICY_TABLE)
def test_policy_table(
    policy: str, designated: str | None, m: int, voter: str | None, local: bool, expected: str
) -> None:
    result = mediate(pending(policy, designated=designated, m=m), select(client=voter, local=local))
    assert result.kind == expected
    status = {"forbidden": 403, "policy_not_implemented": 501}.get(expected)
    if status is not None:  # a refusal: the status the vote route answers
        assert isinstance(result, Forbidden | PolicyNotImplemented)
        assert result.http_status == status


def test_mediation_crosses_temporal_as_json() -> None:
    converter = pydantic_data_converter.payload_converter
    state = pending("consensus", m=3)
    results: list[Any] = [
        mediate(state, select(client="a")),
        mediate(state, cancel()),
        mediate(pending("local-only"), select(local=False)),
        mediate(state, select("nope")),
        mediate(pending("unanimous"), select()),
    ]
    hints: list[Any] = [Mediation]  # an Annotated union, as a workflow update would declare
    for result in results:
        payloads = converter.to_payloads([result])
        (back,) = converter.from_payloads(payloads, hints)
        assert back == result
        assert type(back) is type(result)


# --------------------------------------------------------------------------- HTTP body

BODY_ERRORS = [
    pytest.param({}, "outcome_missing", id="058-empty-body"),
    pytest.param({"outcome": {"outcome": "maybe"}}, "outcome_unknown", id="059-bad-outcome"),
    pytest.param(None, "body_not_object", id="null"),
    pytest.param([], "body_not_object", id="array"),
    pytest.param("selected", "body_not_object", id="string"),
    pytest.param({"outcome": "cancelled"}, "outcome_not_object", id="flat-cancelled"),
    pytest.param(
        {"outcome": "selected", "optionId": "proceed_once"}, "outcome_not_object", id="flat"
    ),
    pytest.param({"outcome": None}, "outcome_not_object", id="outcome-null"),
    pytest.param({"outcome": {}}, "outcome_unknown", id="outcome-empty"),
    pytest.param({"outcome": {"outcome": "SELECTED"}}, "outcome_unknown", id="case"),
    pytest.param({"outcome": {"outcome": True}}, "outcome_unknown", id="outcome-bool"),
    pytest.param({"outcome": {"outcome": "selected"}}, "option_id_missing", id="no-option"),
    pytest.param(
        {"outcome": {"outcome": "selected", "optionId": None}},
        "option_id_not_string",
        id="option-null",
    ),
    pytest.param(
        {"outcome": {"outcome": "selected", "optionId": 5}}, "option_id_not_string", id="int"
    ),
    pytest.param(
        {"outcome": {"outcome": "selected", "optionId": "x" * (MAX_ID_CHARS + 1)}},
        "option_id_too_long",
        id="too-long",
    ),
]


@pytest.mark.parametrize(("body", "problem"), BODY_ERRORS)
def test_body_errors_answer_the_reference_400(body: Any, problem: str) -> None:
    result = validate_outcome_body(body, max_option_id_chars=MAX_ID_CHARS)
    assert isinstance(result, OutcomeError)
    assert (result.code, result.problem) == ("invalid_outcome", problem)
    assert result.detail
    assert result.http_status == 400
    # 058 / 059: the exact body, no `code`.
    assert result.response_body() == {
        "error": (
            '`outcome` must be `{ outcome: "cancelled" }` or '
            '`{ outcome: "selected", optionId: string }`'
        )
    }
    assert result.response_body() == {"error": INVALID_OUTCOME_ERROR}


BODY_OK = [
    pytest.param(
        {"outcome": {"outcome": "selected", "optionId": "proceed_once"}},
        "selected",
        "proceed_once",
        id="061-ok",
    ),
    pytest.param(
        {"outcome": {"outcome": "selected", "optionId": "cancel"}}, "selected", "cancel", id="066"
    ),
    pytest.param({"outcome": {"outcome": "cancelled"}}, "cancelled", None, id="cancelled"),
    # Well-formed: an empty optionId is one the agent did not offer (mediate's 400).
    pytest.param({"outcome": {"outcome": "selected", "optionId": ""}}, "selected", "", id="empty"),
    pytest.param(
        {"outcome": {"outcome": "cancelled", "optionId": "proceed_once"}},
        "cancelled",
        None,
        id="cancelled-ignores-option",
    ),
    pytest.param(
        {"outcome": {"outcome": "selected", "optionId": "x"}, "answers": {"0": "yes"}},
        "selected",
        "x",
        id="extra-keys",
    ),
]


@pytest.mark.parametrize(("body", "outcome", "option_id"), BODY_OK)
def test_well_formed_bodies(body: Any, outcome: str, option_id: str | None) -> None:
    result = validate_outcome_body(body, max_option_id_chars=MAX_ID_CHARS)
    assert isinstance(result, VoteOutcome)
    assert (result.outcome, result.option_id) == (outcome, option_id)


def test_a_validated_body_then_mediated_matches_the_recordings() -> None:
    ok = validate_outcome_body(
        {"outcome": {"outcome": "selected", "optionId": "proceed_once"}},
        max_option_id_chars=MAX_ID_CHARS,
    )
    assert isinstance(ok, VoteOutcome)
    assert mediate(pending(), _as_vote(ok)).kind == "resolved"
    bad = validate_outcome_body(
        {"outcome": {"outcome": "selected", "optionId": "definitely_not_an_option"}},
        max_option_id_chars=MAX_ID_CHARS,
    )
    assert isinstance(bad, VoteOutcome)  # well-formed: the option check is mediate's (057)
    assert mediate(pending(), _as_vote(bad)).kind == "invalid_option"


def _as_vote(body: VoteOutcome) -> Vote:
    return Vote(client_id=None, is_local=True, outcome=body.outcome, option_id=body.option_id)


def test_not_found_bodies_match_the_recordings() -> None:
    # 056 / 062 / 069 and 065.
    assert not_found_body("c0db1f45-5828-4f9c-9c0d-20656a43d61e") == {
        "error": "No pending permission request",
        "requestId": "c0db1f45-5828-4f9c-9c0d-20656a43d61e",
    }
    assert not_found_body(
        "8b29cc2a-aac4-4252-b67d-72b901dd10f2", "b0cbc699-3263-474c-8598-f304fda634cf"
    ) == {
        "error": "No pending permission request for session",
        "sessionId": "b0cbc699-3263-474c-8598-f304fda634cf",
        "requestId": "8b29cc2a-aac4-4252-b67d-72b901dd10f2",
    }
    assert NotPending(request_id="r").response_body() == not_found_body("r")
    assert NotPending(request_id="r", scoped_to="s").response_body() == not_found_body("r", "s")
    assert NotPending(request_id="r").http_status == 404


# --------------------------------------------------------------------------- default options


def dump(options: list[PermissionOption]) -> list[dict[str, str]]:
    return [option.model_dump() for option in options]


def test_edit_options_are_the_recorded_ones() -> None:
    assert dump(default_options("edit", "write_file", "from_model.txt")) == EDIT_OPTIONS


def test_shell_options_are_the_recorded_ones() -> None:
    options = default_options("execute", "run_shell_command", "touch shell_made.txt")
    assert dump(options) == SHELL_OPTIONS


@pytest.mark.parametrize(
    ("command", "label"),
    [
        ("touch shell_made.txt", "touch *"),
        ("git add package.json", "git add *"),
        ("npm run build", "npm run *"),
        ("ls", "ls *"),
        ("FOO=1 make test", "make *"),
        ("git status && git diff | less", "git status *, git diff *, less *"),
        ('echo "a && b"; rm -rf x', "echo *, rm *"),
        ("ls; ls -la", "ls *"),
        ('echo "unbalanced', "echo *"),
    ],
)
def test_shell_scope_label(command: str, label: str) -> None:
    assert shell_scope_label(command) == label


def test_other_tools_options() -> None:
    mcp = dump(default_options("other", "mcp__github__create_issue", ""))
    assert [o["name"] for o in mcp] == [
        "Always Allow in project: mcp__github__create_issue",
        "Always Allow for user: mcp__github__create_issue",
        "Allow",
        "Reject",
    ]
    fetch = dump(default_options("fetch", "web_fetch", "https://example.com"))
    assert [(o["optionId"], o["name"]) for o in fetch] == [
        ("proceed_always_project", "Always Allow in project"),
        ("proceed_always_user", "Always Allow for user"),
        ("proceed_once", "Allow"),
        ("cancel", "Reject"),
    ]


# --------------------------------------------------------------------------- purity


def _imports(path: str) -> set[str]:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    return imported


def test_module_imports_nothing_that_does_io() -> None:
    assert _imports(permissions.__file__) <= {
        "__future__",
        "typing",
        "pydantic",
        "runtime.failures",  # the refusal base: pure too
    }
    # What moved out of it (the options, the vote's body) is as pure.
    assert _imports(permission_options.__file__) <= {
        "__future__",
        "re",
        "shlex",
        "runtime.sessions.permissions",
    }
    assert _imports(vote_body.__file__) <= {
        "__future__",
        "typing",
        "pydantic",
        "runtime.failures",
        "runtime.sessions.permissions",
    }
    assert _imports(failures.__file__) <= {
        "__future__",
        "collections.abc",
        "typing",
        "pydantic",
        "temporalio.contrib.pydantic",
        "temporalio.exceptions",
    }
