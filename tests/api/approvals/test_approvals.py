"""Approvals (issue 22): every request for a human is one approval with one lifecycle,
listed by one inbox (`GET /api/v1/approvals`, `GET /api/v1/tenants/{t}/approvals`),
answered through its kind's own route with the verified identity recorded. Over HTTP,
against the API with a real worker and Temporal dev server."""

from __future__ import annotations

import asyncio
from typing import Any

from runtime.approvals.ledger import ApprovalKind, approval_id
from runtime.investigation.demo import ensure_demo
from runtime.investigation.models import Research
from runtime.investigation.research import prepare_research, research_state
from runtime.standing_agents.coder_decisions import coder_decision
from runtime.standing_agents.contracts import AttentionKind
from tests.agent_tools_helpers import Browser
from tests.agents_helpers import AgentsDaemon, AgentsFactory
from tests.fakes.webhook_receiver import webhook_receiver

INBOX = "/api/v1/approvals"


def make_id_for_decision(decision_id: str) -> str:
    return approval_id(ApprovalKind.DECISION, decision_id)


async def _inbox(d: AgentsDaemon, path: str = INBOX, **params: Any) -> dict[str, Any]:
    response = await d.client.get(path, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _one(d: AgentsDaemon, approval: str, state: str) -> dict[str, Any]:
    body = await _inbox(d, state=state, limit=200)
    found: list[dict[str, Any]] = [a for a in body["approvals"] if a["approvalId"] == approval]
    assert found, (approval, state, body)
    return found[0]


def _prepared_research(d: AgentsDaemon, workspace: str) -> Research:
    """A research prepared in `workspace` (the demo investigation's), waiting for a human."""
    with d.store.transaction() as db:
        ensure_demo(db)
        return prepare_research(
            db, workspace, "Trace the Riga funds", {"node_ids": ["a-kestrel-riga"]}
        )


async def test_a_decision_is_an_approval_from_request_to_answer(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    decision_id = d.raise_decision(tenant, soa)
    approval = make_id_for_decision(decision_id)
    pending = (await _inbox(d, tenant=tenant))["approvals"]
    assert [a["approvalId"] for a in pending] == [approval]
    entry = pending[0]
    assert entry["kind"] == "decision" and entry["state"] == "pending"
    assert entry["tenant"] == tenant and entry["subject"] == f"agent/{tenant}/{soa}"
    assert entry["askedBy"] == f"agent/{tenant}/{soa}"
    assert entry["link"] == f"/api/v1/tenants/{tenant}/decisions/{decision_id}/respond"
    assert entry["detail"]["options"] == ["approve", "reject"]
    # The tenant's own inbox lists the same.
    own = await _inbox(d, f"/api/v1/tenants/{tenant}/approvals")
    assert [a["approvalId"] for a in own["approvals"]] == [approval]

    # Ten identical answers at once resolve it once; the verified identity is recorded.
    url = f"{d.base(tenant)}/decisions/{decision_id}/respond"
    answer = {"resolution": "approve", "respondedBy": "someone-says"}
    responses = await asyncio.gather(*(d.client.post(url, json=answer) for _ in range(10)))
    assert {r.status_code for r in responses} == {200}
    assert (await _inbox(d, tenant=tenant))["approvals"] == []
    done = await _one(d, approval, "approved")
    assert (done["answer"], done["answeredBy"], done["endReason"]) == (
        "approve",
        "admin",
        "answered",
    )
    assert done["endedAt"] is not None
    # A different answer afterwards is the kind's own 409; the approval is unchanged.
    other = await d.client.post(url, json={"resolution": "reject"})
    assert other.status_code == 409
    assert (await _one(d, approval, "approved"))["answer"] == "approve"


async def test_the_inbox_answers_as_the_kinds_own_route_does(agents: AgentsFactory) -> None:
    """Answering through the inbox is the decision's own respond: ten identical answers at
    once resolve it once (every response reads the same record), a different answer
    afterwards is 409, and the decision's own route sees the inbox's answer."""
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    decision_id = d.raise_decision(tenant, soa)
    approval = make_id_for_decision(decision_id)
    url = f"{INBOX}/{approval}/answer"
    responses = await asyncio.gather(
        *(d.client.post(url, json={"answer": "approve", "note": "ok"}) for _ in range(10))
    )
    assert {r.status_code for r in responses} == {200}, [r.text for r in responses]
    bodies = [r.json() for r in responses]
    assert all(body == bodies[0] for body in bodies)
    assert (bodies[0]["state"], bodies[0]["answer"], bodies[0]["answeredBy"]) == (
        "approved",
        "approve",
        "admin",
    )
    resolved = await d.client.get(f"{d.base(tenant)}/decisions", params={"status": "resolved"})
    (row,) = [x for x in resolved.json()["decisions"] if x["decisionId"] == decision_id]
    assert (row["resolution"], row["resolutionNotes"]) == ("approve", "ok")
    other = await d.client.post(url, json={"answer": "reject"})
    assert other.status_code == 409, other.text
    assert other.json() == {
        "error": "This approval already ended (approved)",
        "code": "approval_already_resolved",
        "approvalId": approval,
        "state": "approved",
        "answer": "approve",
    }
    # Answered on its own route first, the same answer through the inbox reads it.
    second = d.raise_decision(tenant, soa)
    own = await d.client.post(
        f"{d.base(tenant)}/decisions/{second}/respond", json={"resolution": "reject"}
    )
    assert own.status_code == 200, own.text
    again = await d.client.post(
        f"{INBOX}/{make_id_for_decision(second)}/answer", json={"answer": "reject"}
    )
    assert again.status_code == 200 and again.json()["state"] == "denied"
    # A free-text answer longer than the approval records (200 characters) is still the
    # same answer when sent again.
    third = make_id_for_decision(d.raise_decision(tenant, soa))
    long = "ship it on Monday, " * 20
    answers = await asyncio.gather(
        *(d.client.post(f"{INBOX}/{third}/answer", json={"answer": long}) for _ in range(3))
    )
    assert {r.status_code for r in answers} == {200}, [r.text for r in answers]
    assert answers[0].json()["state"] == "answered"


async def test_the_inbox_answers_a_research_and_refuses_what_it_cannot(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    workspace = d.settings.agent_tools_workspace
    research = _prepared_research(d, workspace)
    approval = f"research:{research.research_id}"
    url = f"{INBOX}/{approval}/answer"
    maybe = await d.client.post(url, json={"answer": "maybe"})
    assert maybe.status_code == 400
    assert maybe.json() == {
        "error": "This approval takes one of: approve, deny",
        "code": "invalid_answer",
        "approvalId": approval,
        "expected": ["approve", "deny"],
    }
    approved = await d.client.post(url, json={"answer": "approve", "note": "scope is fine"})
    assert approved.status_code == 200, approved.text
    assert (approved.json()["state"], approved.json()["answeredBy"]) == ("approved", "admin")
    with d.store.session() as db:
        assert research_state(db, workspace, research.research_id).state == "admitted"
    assert (await d.client.post(url, json={"answer": "approve"})).status_code == 200
    denied = await d.client.post(url, json={"answer": "deny"})
    assert denied.status_code == 409 and denied.json()["code"] == "approval_already_resolved"
    for path, body, status, code in (
        (f"{INBOX}/decision:nope/answer", {"answer": "approve"}, 404, "approval_not_found"),
        (f"{INBOX}/../answer", {"answer": "approve"}, 404, None),
        (url, {"answer": ""}, 400, None),
        (url, {"answer": "approve", "extra": 1}, 400, None),
    ):
        refused = await d.client.post(path, json=body)
        assert refused.status_code == status, (path, body, refused.text)
        if code:
            assert refused.json()["code"] == code


async def test_who_may_answer_which_kind(agents: AgentsFactory) -> None:
    """A tenant's operator answers its tenant's decisions through the tenant's inbox (its
    name recorded), nothing of the deployment's and nothing of another tenant; a coder
    answers nothing."""
    d = await agents()
    tenant, other = d.tenant(), d.tenant()
    soa, other_soa = await d.soa(tenant), await d.soa(other)
    decision = make_id_for_decision(d.raise_decision(tenant, soa))
    foreign = make_id_for_decision(d.raise_decision(other, other_soa))
    tokens: dict[str, dict[str, str]] = {}
    for role in ("operator", "coder"):
        issued = await d.client.post(
            f"/api/v1/tenants/{tenant}/tokens", json={"name": f"alice-{role}", "role": role}
        )
        assert issued.status_code == 201, issued.text
        tokens[role] = {"Authorization": f"Bearer {issued.json()['token']}"}
    own = f"/api/v1/tenants/{tenant}/approvals"
    for role, path, status, code in (
        ("coder", f"{own}/{decision}/answer", 403, "forbidden_role"),
        ("operator", f"{INBOX}/{decision}/answer", 403, "forbidden_role"),
        ("operator", f"/api/v1/tenants/{other}/approvals/{foreign}/answer", 403, None),
        ("operator", f"{own}/{foreign}/answer", 404, "approval_not_found"),
    ):
        refused = await d.client.post(path, json={"answer": "approve"}, headers=tokens[role])
        assert refused.status_code == status, (role, path, refused.text)
        if code:
            assert refused.json()["code"] == code
    answered = await d.client.post(
        f"{own}/{decision}/answer", json={"answer": "approve"}, headers=tokens["operator"]
    )
    assert answered.status_code == 200, answered.text
    assert answered.json()["answeredBy"] == "operator:alice-operator"


async def test_a_free_text_answer_is_answered_and_a_reject_denied(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    first, second = d.raise_decision(tenant, soa), d.raise_decision(tenant, soa)
    base = f"{d.base(tenant)}/decisions"
    for decision_id, resolution in ((first, "ship on Monday"), (second, "reject")):
        response = await d.client.post(
            f"{base}/{decision_id}/respond", json={"resolution": resolution}
        )
        assert response.status_code == 200, response.text
    assert (await _one(d, make_id_for_decision(first), "answered"))["answer"] == "ship on Monday"
    assert (await _one(d, make_id_for_decision(second), "denied"))["answer"] == "reject"


async def test_a_reset_supersedes_the_agents_pending_approvals(agents: AgentsFactory) -> None:
    """A reset ends the generation that asked: its requests are superseded, on the queue
    and as approvals, and a late answer is refused. A stop only pauses the agent: what it
    asked stands, for an operator to answer before starting it again."""
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    # Its first tick over: a reset waits for a running tick to end (409 tick_in_progress).
    await d.wait_until(
        lambda: d.turns(soa) and not d.instance(soa).tick_in_progress, "the first tick's end"
    )
    d.set_instance(soa, status="Active")
    decision = d.raise_decision(tenant, soa)
    mode_change = d.raise_decision(
        tenant, soa, AttentionKind.MODE_CHANGE, {"mode": "Discovery", "reason": "r"}
    )
    stopped = await d.client.post(f"{d.base(tenant)}/agents/{soa}/stop")
    assert stopped.status_code == 200, stopped.text
    pending = (await _inbox(d, tenant=tenant))["approvals"]
    assert {a["ref"] for a in pending} == {decision, mode_change}
    await d.wait_until(lambda: not d.instance(soa).tick_in_progress, "no tick running")
    reset = await d.client.post(f"{d.base(tenant)}/agents/{soa}/reset")
    assert reset.status_code == 200, reset.text
    for decision_id in (decision, mode_change):
        ended = await _one(d, make_id_for_decision(decision_id), "superseded")
        assert ended["endReason"] == "the agent was reset"
        late = await d.client.post(
            f"{d.base(tenant)}/decisions/{decision_id}/respond", json={"resolution": "approve"}
        )
        assert late.status_code == 409
        assert late.json()["resolution"] == "superseded"
    assert (await _inbox(d, tenant=tenant))["approvals"] == []


async def test_an_mcp_call_approval_carries_its_digest(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    digest = "sha256:" + "ab" * 32
    payload = {
        "tool": "mcp__files__write",
        "server": "files",
        "serverTool": "write",
        "arguments": {"path": "a.txt"},
        "digest": digest,
    }
    d.set_instance(soa, active_mode="Incident")
    decision_id = d.raise_decision(tenant, soa, AttentionKind.MCP_CALL, payload)
    entry = (await _inbox(d, tenant=tenant, kind="mcp_call"))["approvals"][0]
    # The agent's mode when it asked: a `mode:` override of the timeout applies to it.
    assert entry["detail"]["mode"] == "Incident"
    assert entry["approvalId"] == f"mcp_call:{decision_id}"
    assert entry["digest"] == digest
    assert entry["detail"]["call"] == {
        "tool": "mcp__files__write",
        "server": "files",
        "serverTool": "write",
        "arguments": {"path": "a.txt"},
    }
    assert (await _inbox(d, tenant=tenant, kind="decision"))["approvals"] == []


async def test_a_research_authorization_is_an_approval(agents: AgentsFactory) -> None:
    d = await agents()
    workspace = d.settings.agent_tools_workspace
    research = _prepared_research(d, workspace)
    approval = f"research:{research.research_id}"
    entry = await _one(d, approval, "pending")
    assert entry["kind"] == "research" and entry["tenant"] is None
    assert entry["link"] == f"/api/v1/research/{research.research_id}/decision"
    browser = await Browser(d.client).open()  # the research routes are the page's
    decided = await browser.post(
        entry["link"], {"decision": "deny", "decided_by": "ana", "workspace": workspace}
    )
    assert decided.status_code == 200, decided.text
    done = await _one(d, approval, "denied")
    # Who the bearer verified, beside what the body declared.
    assert (done["answeredBy"], done["answeredClient"]) == ("admin", "ana")


async def test_the_inbox_pages_filters_and_refuses_what_it_does_not_know(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    ids = [make_id_for_decision(d.raise_decision(tenant, soa)) for _ in range(5)]
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(3):
        params: dict[str, Any] = {"tenant": tenant, "limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = await _inbox(d, **params)
        seen += [a["approvalId"] for a in page["approvals"]]
        cursor = page["nextCursor"]
    assert seen == ids and cursor is None
    for params in (
        {"cursor": "bm90LWEtY3Vyc29y"},
        {"kind": "nothing"},
        {"state": "maybe"},
        {"limit": 0},
        {"tenant": "../x"},
    ):
        refused = await d.client.get(INBOX, params=params)
        assert refused.status_code == 400, (params, refused.text)
    assert (await d.client.get(INBOX, params={"cursor": "bm90LWEtY3Vyc29y"})).json()[
        "code"
    ] == "invalid_cursor"


async def test_a_tenant_token_reads_its_tenants_inbox_only(agents: AgentsFactory) -> None:
    d = await agents()
    tenant, other = d.tenant(), d.tenant()
    soa = await d.soa(tenant)
    d.raise_decision(tenant, soa)
    issued = await d.client.post(
        f"/api/v1/tenants/{tenant}/tokens", json={"name": "alice", "role": "operator"}
    )
    assert issued.status_code == 201, issued.text
    bearer = {"Authorization": f"Bearer {issued.json()['token']}"}
    own = await d.client.get(f"/api/v1/tenants/{tenant}/approvals", headers=bearer)
    assert own.status_code == 200 and len(own.json()["approvals"]) == 1
    for path in (INBOX, f"/api/v1/tenants/{other}/approvals"):
        refused = await d.client.get(path, headers=bearer)
        assert refused.status_code == 403, (path, refused.text)


async def test_a_coders_question_ends_with_its_task(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    await d.soa(tenant)
    url = f"{d.base(tenant)}/coding-tasks"
    created = await d.client.post(
        url, json={"title": "Fix the build", "instructions": "make test passes"}
    )
    assert created.status_code == 201, created.text
    task_id = created.json()["taskId"]
    row = coder_decision(
        d.store,
        tenant=tenant,
        title="Which branch?",
        body="main or release?",
        options=["main", "release"],
        asked_by="alice",
        task_id=task_id,
        op_id=f"ask/{task_id}",
    )
    entry = (await _inbox(d, tenant=tenant, kind="coder_question"))["approvals"][0]
    assert entry["approvalId"] == f"coder_question:{row.decision_id}"
    assert (entry["subject"], entry["askedBy"]) == (
        f"coding-task/{tenant}/{task_id}",
        "coder:alice",
    )
    cancelled = await d.client.post(f"{url}/{task_id}/cancel", json={})
    assert cancelled.status_code == 200, cancelled.text
    ended = await _one(d, entry["approvalId"], "superseded")
    assert ended["endReason"] == "the coding task cancelled"
    decision = await d.client.get(f"{d.base(tenant)}/decisions", params={"status": "resolved"})
    (resolved,) = [x for x in decision.json()["decisions"] if x["decisionId"] == row.decision_id]
    assert resolved["resolution"] == "superseded"


async def _timed(d: AgentsDaemon, approval: str) -> dict[str, Any]:
    """The approval once the approvals' clock gave it its kind's timeout."""
    for _ in range(300):
        body = await _inbox(d, state=["pending", "expired"], limit=200)
        found: list[dict[str, Any]] = [a for a in body["approvals"] if a["approvalId"] == approval]
        if found and found[0]["timeoutMs"] is not None:
            return found[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{approval} was never timed")


async def test_unanswered_requests_warn_then_expire_as_their_kind_ends_them(
    agents: AgentsFactory,
) -> None:
    """A decision is answered `expired`, an MCP call refused; both approvals expire, after
    an `approval.expiring` owed ahead of time; a late answer is 409."""
    d = await agents(
        decision_timeout_ms=4000, mcp_approval_timeout_ms=4000, approval_expiring_lead_ms=3000
    )
    tenant = d.tenant()
    soa = await d.soa(tenant)
    async with webhook_receiver() as receiver:
        made = await d.client.post(
            "/api/v1/notification-endpoints",
            json={
                "url": receiver.url,
                "eventTypes": ["approval.expiring", "approval.resolved"],
                "tenant": tenant,
            },
        )
        receiver.secret = made.json()["secret"]
        question = d.raise_decision(tenant, soa)
        call = d.raise_decision(
            tenant, soa, AttentionKind.MCP_CALL, {"tool": "mcp__a__b", "arguments": {}}
        )
        timed = await _timed(d, make_id_for_decision(question))
        assert timed["timeoutMs"] == 4000 and timed["expiresAt"] is not None
        assert (await _timed(d, f"mcp_call:{call}"))["timeoutMs"] == 4000
        for approval in (make_id_for_decision(question), f"mcp_call:{call}"):
            ended = await _one_eventually(d, approval, "expired")
            assert (ended["answeredBy"], ended["endReason"]) == (
                "agentrt",
                "no answer within 4000 ms",
            )
        base = f"{d.base(tenant)}/decisions"
        decisions = {
            x["decisionId"]: x
            for x in (await d.client.get(base, params={"status": "resolved"})).json()["decisions"]
        }
        assert decisions[question]["resolution"] == "expired"
        assert decisions[call]["resolution"] == "reject"
        late = await d.client.post(f"{base}/{question}/respond", json={"resolution": "approve"})
        assert late.status_code == 409
        warned = await _wait_for(lambda: len(receiver.events("approval.expiring")) == 2)
        assert warned
        assert {e["data"]["approvalId"] for e in receiver.events("approval.expiring")} == {
            make_id_for_decision(question),
            f"mcp_call:{call}",
        }
        resolved = await _wait_for(lambda: len(receiver.events("approval.resolved")) == 2)
        assert resolved
        assert {e["data"]["state"] for e in receiver.events("approval.resolved")} == {"expired"}


async def test_a_timeout_of_zero_is_none(agents: AgentsFactory) -> None:
    """0 is stated as 0 (the clock runs: another kind is timed)."""
    d = await agents(decision_timeout_ms=0, mcp_approval_timeout_ms=60_000)
    tenant = d.tenant()
    soa = await d.soa(tenant)
    timed = await _timed(d, make_id_for_decision(d.raise_decision(tenant, soa)))
    assert (timed["timeoutMs"], timed["expiresAt"], timed["state"]) == (0, None, "pending")


async def test_an_unauthorized_research_expires_denied(agents: AgentsFactory) -> None:
    d = await agents(research_timeout_ms=1500)
    workspace = d.settings.agent_tools_workspace
    research = _prepared_research(d, workspace)
    ended = await _one_eventually(d, f"research:{research.research_id}", "expired")
    assert (ended["answer"], ended["answeredBy"]) == ("deny", "agentrt")
    with d.store.session() as db:
        state = research_state(db, workspace, research.research_id)
    assert state.state == "denied"
    assert state.decision is not None and state.decision.decided_by == "agentrt"


async def _one_eventually(d: AgentsDaemon, approval: str, state: str) -> dict[str, Any]:
    for _ in range(600):
        body = await _inbox(d, state=state, limit=200)
        found: list[dict[str, Any]] = [a for a in body["approvals"] if a["approvalId"] == approval]
        if found:
            return found[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{approval} never {state}")


async def _wait_for(check: Any) -> bool:
    for _ in range(600):
        if check():
            return True
        await asyncio.sleep(0.1)
    return False
