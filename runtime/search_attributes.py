"""The search attributes agentrt's workflows carry, and the list filters built on them.

Workflows set them, so the Temporal Web UI filters on them and the API counts and lists
by them; `runtime.temporal.ensure_search_attributes` registers them on the namespace
(`agentrt up`, compose). A workflow starts with the pairs `starting` builds, and every
query on them is built by `running` here, so a value is quoted one way everywhere.
"""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributeKey, SearchAttributePair

KIND = SearchAttributeKey.for_keyword("AgentrtKind")
TENANT = SearchAttributeKey.for_keyword("AgentrtTenant")
STATUS = SearchAttributeKey.for_keyword("AgentrtStatus")
MODE = SearchAttributeKey.for_keyword("AgentrtMode")
KEYS: tuple[SearchAttributeKey[str], ...] = (KIND, TENANT, STATUS, MODE)


def starting(
    kind: str, tenant: str, *, status: str | None = None, mode: str | None = None
) -> list[SearchAttributePair[Any]]:
    """The search attributes a workflow of `kind` starts with (`TypedSearchAttributes` of
    a start, or a schedule's action): its kind and tenant, and its status and mode when
    it has them. The workflow keeps them current from then on."""
    pairs: list[SearchAttributePair[Any]] = [
        SearchAttributePair(KIND, kind),
        SearchAttributePair(TENANT, tenant),
    ]
    if status is not None:
        pairs.append(SearchAttributePair(STATUS, status))
    if mode is not None:
        pairs.append(SearchAttributePair(MODE, mode))
    return pairs


def quoted(value: str) -> str:
    """`value` as a string literal of Temporal's list-filter language."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def running(kind: str, *, tenant: str | None = None, status: str | None = None) -> str:
    """The list filter of the running workflows of `kind`.

    Args:
        kind: their `AgentrtKind` (`session`, `windows-lease`, `agent`, ...).
        tenant: only those of this `AgentrtTenant` (a daemon's workspace, a tenant).
        status: only those whose `AgentrtStatus` is this.

    Returns:
        A query for `Client.list_workflows` or `Client.count_workflows`.
    """
    clauses = [f"{KIND.name} = {quoted(kind)}"]
    if tenant is not None:
        clauses.append(f"{TENANT.name} = {quoted(tenant)}")
    if status is not None:
        clauses.append(f"{STATUS.name} = {quoted(status)}")
    clauses.append("ExecutionStatus = 'Running'")
    return " AND ".join(clauses)
