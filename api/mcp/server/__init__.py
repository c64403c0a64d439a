"""agentrt as an MCP server: `/mcp`, Streamable HTTP, served by the official SDK (PyPI
`mcp`, `MCPServer`) inside the API, behind the same security chain.

Who calls is the identity the bearer check verified (api/security/roles.py): a tenant
token (`coder` or `operator`) reaches its own tenant's tools; the deployment token names
the tenant in the `X-Agentrt-Tenant` header. `/mcp` always needs a configured token (401
`token_required` on a tokenless daemon, like the strict mutations). Stateless: every
request stands alone, so any API replica answers it.

The tools, each with MCP annotations:
- the registry: `agent_register`, `agent_heartbeat`, `agent_list`, `agent_route`,
  `agent_unregister` (the REST registry's store; 5-minute TTL);
- coding tasks: `coding_task_list`, `coding_task_get`, `coding_task_claim`,
  `coding_task_update`, `coding_task_complete` (runtime/coding_tasks; the holder is the
  verified identity, never a self-declared one);
- humans: `decision_request` (the tenant's decision queue), `decision_get`.

A tool's failure is a result with `isError: true` whose text is agentrt's error body,
`{"code", "message", "data"}`; protocol errors are for protocol faults only. A retried
`tools/call` does nothing twice: a claim or a completion by the same holder answers the
same (compare-and-swap on the task's state), a progress note carries `noteId` and a
decision request `requestId`, which make a retry add nothing.
"""

from api.mcp.server.endpoint import McpEndpoint
from api.security.roles import MCP_PATH

# Only the endpoint here: the tools (api/mcp/server/tools.py) import the SDK, which the
# endpoint loads on the first request to /mcp.
__all__ = ["MCP_PATH", "McpEndpoint"]
