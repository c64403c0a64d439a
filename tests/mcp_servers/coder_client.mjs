// An MCP coding agent built on the official TypeScript SDK (@modelcontextprotocol/sdk),
// driving agentrt's /mcp over Streamable HTTP: the suite runs it (tests/api/mcp/test_mcp_server.py).
// Usage: node coder_client.mjs <url> <bearer> <taskId>
// Prints one JSON line per step: {step, isError, body}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, taskId] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "ts-coder", version: "1.0.0" });
await client.connect(transport);

function show(step, result) {
  const text = result.content?.[0]?.text ?? "";
  let body;
  try { body = JSON.parse(text); } catch { body = text; }
  console.log(JSON.stringify({ step, isError: Boolean(result.isError), body }));
}

const tools = await client.listTools();
console.log(JSON.stringify({ step: "tools", isError: false, body: tools.tools.map((t) => t.name).sort() }));
show("register", await client.callTool({
  name: "agent_register", arguments: { agentId: "ts-1", role: "Coder", capabilities: ["node"] },
}));
show("claim", await client.callTool({ name: "coding_task_claim", arguments: { taskId, agentId: "ts-1" } }));
show("update", await client.callTool({
  name: "coding_task_update", arguments: { taskId, note: "built", noteId: "n1" },
}));
show("complete", await client.callTool({
  name: "coding_task_complete", arguments: { taskId, outcome: "succeeded", summary: "done by ts" },
}));
show("missing", await client.callTool({ name: "coding_task_get", arguments: { taskId: "nope" } }));
show("heartbeat", await client.callTool({ name: "agent_heartbeat", arguments: { agentId: "ts-1" } }));
show("list", await client.callTool({ name: "agent_list", arguments: {} }));
show("route", await client.callTool({ name: "agent_route", arguments: { capability: "node" } }));
show("tasks", await client.callTool({ name: "coding_task_list", arguments: { state: ["succeeded"] } }));
show("get", await client.callTool({ name: "coding_task_get", arguments: { taskId } }));
show("ask", await client.callTool({
  name: "decision_request", arguments: { title: "Merge?", body: "Merge the bump.", requestId: "q1" },
}));
const asked = JSON.parse((await client.callTool({
  name: "decision_request", arguments: { title: "Merge?", body: "Merge the bump.", requestId: "q1" },
})).content[0].text);
show("answer", await client.callTool({ name: "decision_get", arguments: { decisionId: asked.decisionId } }));
show("windows", await client.callTool({ name: "windows_windows", arguments: { taskId } }));
show("invalid", await client.callTool({ name: "coding_task_complete", arguments: { taskId, outcome: "maybe" } }));
show("unregister", await client.callTool({ name: "agent_unregister", arguments: { agentId: "ts-1" } }));
await client.close();
