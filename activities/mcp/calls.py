"""MCP tool calls of an agent, through the worker's pool, with the guarantees of agentrt's
own tools (runtime/tools.Dispatch):

- A tool annotated `readOnlyHint: true` runs as a local activity: it may run again when a
  workflow task is replayed, which a read allows.
- Any other runs in a regular activity under the call's operation id, recorded `started`
  in the operation ledger before the request goes out; the id also travels in the
  request's `_meta` under `io.agentrt/operationId`, so a server that deduplicates can.
  The result is recorded with it, and every later attempt returns the record. An attempt
  that finds the operation started but never finished (its worker died mid-call) calls
  again only a tool annotated `idempotentHint: true`; any other reports
  `outcome_unknown` and is not called again: the server sees the call once or never.

A server's failure (it crashed, broke the protocol, timed out, or answered
`isError: true`) is a failed tool call with the server's message, never an exception.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from activities.mcp.failures import McpUnavailable, classify
from activities.mcp.pool import McpPool, McpTool
from runtime.llm.contracts import ToolCall
from runtime.mcp.config import McpServerConfig, McpServers, load_servers
from runtime.mcp.contracts import McpBinding, server_prefix
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.store.operations import OperationLedger
from runtime.tools import ToolArgumentsError
from runtime.tools.results import ToolResult, bound, failed_result, text_item

if TYPE_CHECKING:
    from mcp_types import CallToolResult

OPERATION_ID_KEY: Final = "io.agentrt/operationId"
OUTCOME_UNKNOWN: Final = "outcome_unknown"
MCP_IMAGES_PREFIX: Final = "mcp-images/"
IMAGE_EVENT: Final = "mcp_image"
IMAGE_RETENTION: Final = 200
# What one call's result may keep of images: the kinds a model API shows, bounded.
IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_IMAGE_BYTES: Final = 5 * 1024 * 1024
MAX_IMAGES: Final = 8
# Text content beyond this goes to the model cut; the whole text (up to MAX_STORED_BYTES)
# is kept by reference, like a binary resource.
MAX_TEXT: Final = 64_000
MAX_STORED_BYTES: Final = 8 * 1024 * 1024
CONTENT_EVENT: Final = "mcp_content"


@dataclass(frozen=True)
class ResolvedTool:
    tool: McpTool
    config: McpServerConfig


class McpCalls:
    """The MCP tools of a workspace for its sessions: what is offered, and the calls."""

    def __init__(
        self, pool: McpPool, store: Store, journal: EventJournal, settings: Settings
    ) -> None:
        self.pool = pool
        self.store = store
        self.journal = journal
        self.settings = settings
        self.ledger = OperationLedger(store)

    async def servers(self, workspace: str) -> McpServers:
        """The workspace's configuration as it is now (runtime/mcp/config.load_servers)."""
        return await asyncio.to_thread(
            load_servers,
            self.store,
            workspace,
            self.settings.resolved_data_dir,
            self.settings.mcp_workspace_servers,
        )

    async def offered(self, workspace: str) -> list[McpTool]:
        """The tools of the workspace's enabled servers (unreachable ones left out)."""
        servers = await self.servers(workspace)
        enabled = servers.enabled()
        if not enabled:
            return []
        tools, _ = await self.pool.tools(workspace, enabled)
        return tools

    async def resolve(self, workspace: str, name: str) -> ResolvedTool | None:
        servers = await self.servers(workspace)
        enabled = servers.enabled()
        # Only the servers the name can come from are opened: a call never waits on
        # another server's connection.
        candidates = [s for s in enabled if name.startswith(server_prefix(s))]
        if not candidates:
            return None
        tools, _ = await self.pool.tools(workspace, enabled, only=candidates)
        for tool in tools:
            if tool.descriptor.name == name:
                return ResolvedTool(tool, enabled[tool.server])
        return None

    async def bound(self, workspace: str, binding: McpBinding) -> ResolvedTool | str:
        """The tool a preview bound a call to, or why it cannot run any more."""
        servers = await self.servers(workspace)
        config = servers.enabled().get(binding.server)
        if config is None:
            return f"MCP server {binding.server} is no longer configured or enabled"
        if config.fingerprint() != binding.fingerprint:
            return (
                f"MCP server {binding.server}'s configuration changed since this call was "
                "proposed; it was not called"
            )
        tools, failures = await self.pool.tools(workspace, servers.enabled(), only=[binding.server])
        for tool in tools:
            if tool.server == binding.server and tool.tool == binding.tool:
                return ResolvedTool(tool, config)
        if binding.server in failures:
            return f"MCP server {binding.server}: {failures[binding.server]}"
        return f"MCP server {binding.server} no longer offers {binding.tool}"

    async def _target(
        self, workspace: str, call: ToolCall, binding: McpBinding | None
    ) -> ResolvedTool | str:
        if binding is not None:
            return await self.bound(workspace, binding)
        resolved = await self.resolve(workspace, call.name)
        return resolved if resolved is not None else f'Tool "{call.name}" not found.'

    async def read(
        self, workspace: str, call: ToolCall, scope: str, binding: McpBinding | None = None
    ) -> ToolResult:
        """A read-only tool's call (no ledger: it may repeat)."""
        resolved = await self._target(workspace, call, binding)
        if isinstance(resolved, str):
            return failed_result(resolved)
        return await self._call(workspace, resolved, call, None, scope)

    async def run_once(
        self,
        workspace: str,
        call: ToolCall,
        op_id: str,
        scope: str,
        binding: McpBinding | None = None,
        *,
        retry_idempotent: bool = True,
    ) -> ToolResult:
        """Any other tool's call, under its operation id (see the module's docstring).

        An operation an earlier attempt started and never finished is decided before
        anything else is checked (a refusal now would say "not called" of a call the
        server may have applied): called again only when the tool is annotated
        `idempotentHint: true` and `retry_idempotent` allows it (a human's approval of a
        call does not: the server's hint is only its word), else `outcome_unknown`.
        """
        record = await asyncio.to_thread(self.ledger.get, op_id)
        if record is not None and record.state == "done" and record.result is not None:
            return ToolResult.model_validate(record.result)
        resolved = await self._target(workspace, call, binding)
        if record is not None:
            idempotent = (
                retry_idempotent
                and not isinstance(resolved, str)
                and resolved.tool.descriptor.annotations.idempotentHint
            )
            if not idempotent:
                unknown = _outcome_unknown(call.name)
                await asyncio.to_thread(self.ledger.finish, op_id, unknown.model_dump(mode="json"))
                return unknown
        if isinstance(resolved, str):
            return failed_result(resolved)  # refused before anything was sent
        if record is None:
            # The attempt's token tells whose record it is: an attempt of the same call
            # running meanwhile (a timed-out one still alive) that began first wins.
            attempt = uuid.uuid4().hex
            record = await asyncio.to_thread(
                self.ledger.begin, op_id, call.name, result={"attempt": attempt}
            )
            if (record.result or {}).get("attempt") != attempt:
                return _outcome_unknown(call.name)
        result = await self._call(workspace, resolved, call, op_id, scope)
        await asyncio.to_thread(self.ledger.finish, op_id, result.model_dump(mode="json"))
        return result

    async def _call(
        self,
        workspace: str,
        resolved: ResolvedTool,
        call: ToolCall,
        op_id: str | None,
        scope: str,
    ) -> ToolResult:
        tool = resolved.tool
        try:
            tool.descriptor.validate(dict(call.arguments))
        except ToolArgumentsError as err:
            return failed_result(str(err))  # never sent: the schema the model saw says no
        meta = {OPERATION_ID_KEY: op_id} if op_id else {}
        try:
            result = await self.pool.call(
                workspace, tool.server, resolved.config, tool.tool, dict(call.arguments), meta
            )
        except McpUnavailable as err:
            return failed_result(f"MCP server {tool.server}: {err}")
        except Exception as err:  # the SDK's MCPError, a broken stream, a timeout
            failure = classify(err, resolved.config, self.pool.secrets(resolved.config))
            return failed_result(f"MCP server {tool.server}: {failure}")
        return await self._result(result, scope)

    async def _result(self, result: CallToolResult, scope: str) -> ToolResult:
        from mcp_types import (
            AudioContent,
            EmbeddedResource,
            ImageContent,
            ResourceLink,
            TextContent,
        )

        texts: list[str] = []
        images: list[str] = []
        for item in result.content:
            if isinstance(item, TextContent):
                texts.append(item.text)
            elif isinstance(item, ImageContent):
                size = len(item.data) * 3 // 4
                if (
                    item.mime_type not in IMAGE_TYPES
                    or size > MAX_IMAGE_BYTES
                    or len(images) >= MAX_IMAGES
                ):
                    texts.append(f"[image {item.mime_type[:40]}, {size} bytes: not kept]")
                    continue
                images.append(await self._store_image(scope, item.mime_type, item.data))
                texts.append(f"[image {item.mime_type}: {images[-1]}]")
            elif isinstance(item, EmbeddedResource):
                resource = item.resource
                text = getattr(resource, "text", None)
                if isinstance(text, str):
                    texts.append(text)
                else:
                    blob = str(getattr(resource, "blob", "") or "")
                    size = len(blob) * 3 // 4 - blob[-2:].count("=")
                    mime = str(getattr(resource, "mime_type", None) or "application/octet-stream")
                    where = "too large to keep"
                    if size <= MAX_STORED_BYTES:
                        where = "stored as " + await self._store(
                            scope,
                            CONTENT_EVENT,
                            {"mimeType": mime, "data": blob, "uri": str(resource.uri)},
                        )
                    texts.append(f"[resource {resource.uri}: {size} bytes of {mime[:80]}, {where}]")
            elif isinstance(item, ResourceLink):
                texts.append(f"[resource link {item.uri}: {item.name}]")
            elif isinstance(item, AudioContent):
                texts.append(f"[audio {item.mime_type}, not shown]")
        if result.structured_content is not None and not texts:
            texts.append(json.dumps(result.structured_content))
        whole = "\n".join(texts)
        text = bound(whole, MAX_TEXT)
        if text != whole and len(whole.encode()) <= MAX_STORED_BYTES:
            # Kept whole, out of history and the transcript: the model reads its start and
            # the references of what the cut hides (images, binary resources) after it.
            ref = await self._store(scope, CONTENT_EVENT, {"mimeType": "text/plain", "text": whole})
            refs = [n for n in texts if n.startswith(("[image ", "[resource "))]
            tail = "\n".join([*refs, f"[the whole result is stored as {ref}]"])
            room = max(1000, MAX_TEXT - len(tail.encode()) - 100)
            text = bound(whole, room) + "\n" + tail
        if result.is_error:
            return failed_result(text or "the MCP server reported an error")
        return ToolResult(
            status="completed", output_text=text, content=[text_item(text)], image_refs=images
        )

    async def _store_image(self, scope: str, mime: str, data: str) -> str:
        """Keep an image out of history and the transcript: the journal holds it, the
        tool's answer carries its reference (read back like a Windows screenshot)."""
        return await self._store(scope, IMAGE_EVENT, {"mimeType": mime, "data": data})

    async def _store(self, scope: str, event: str, data: dict[str, str]) -> str:
        """Content kept by reference, `mcp-images/{scope}#{seq}` (the stream images use:
        a binary resource, a text past MAX_TEXT), bounded by IMAGE_RETENTION per scope."""
        stream = f"{MCP_IMAGES_PREFIX}{scope}"
        entry = await self.journal.aappend(stream, event, data, retention=IMAGE_RETENTION)
        return f"{stream}#{entry.seq}"


def _outcome_unknown(name: str) -> ToolResult:
    message = (
        f"{OUTCOME_UNKNOWN}: the worker calling {name} stopped before the server answered, "
        "so whether the server applied it is unknown; it was not called again."
    )
    return failed_result(message)
