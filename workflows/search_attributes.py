"""The search attributes agentrt's workflows carry, so the Web UI can filter on them.

Registered by `runtime.temporal.ensure_search_attributes` (`agentrt up`, compose).
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

KIND = SearchAttributeKey.for_keyword("AgentrtKind")
TENANT = SearchAttributeKey.for_keyword("AgentrtTenant")
STATUS = SearchAttributeKey.for_keyword("AgentrtStatus")
MODE = SearchAttributeKey.for_keyword("AgentrtMode")
