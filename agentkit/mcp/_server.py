"""`MCPServer`: an MCP server's tools as `Tool`s, so every call the model makes to them is held
by the grammar built from the server's input schemas, validated, and then sent to the server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import pydantic
from mcp import MCPError
from mcp import types as mcp_types
from mcp.client import Transport

from .._context import RunContext
from ._connection import Connection, http_transport, stdio_transport
from ._errors import MCPConnectError, MCPProtocolError, MCPServerLost, MCPToolError, MCPToolNameCollision
from ._results import content_text, result_value
from .._tools.tool import Tool

MAX_TOOL_PAGES = 100
"""Pages of `tools/list` read at most: a server whose cursor never ends cannot hang a listing."""


class MCPServer:
    """An MCP server, started (stdio) or reached (streamable HTTP) for the length of an
    `async with` block; build one with `MCPServer.stdio` or `MCPServer.http`.

    Inside the block, `await server.list_tools()` gives its tools as `Tool`s whose calls go to
    the server. A server that exits or drops its connection is started or connected again on
    the next call; leaving the block (also by cancellation) stops it.

    Options: `name` (in errors; default: the name the server reports), `prefix` (put before
    every tool name, to tell apart servers whose tools share names), `timeout` (seconds per
    call; None: the agent's `tool_timeout`), `strict` (refuse a tool whose schema has a
    constraint the grammar cannot enforce while decoding, as `@tool(strict=True)` does),
    `connect_timeout` (seconds to start and initialise the server, and to list its tools),
    `extra_arguments` (let the model send arguments a tool does not declare, where its schema
    allows them by saying nothing; off by default, since servers mostly ignore them and small
    models fill them with noise: every call sent still validates against the server's schema).
    """

    def __init__(
        self,
        transport: Callable[[], Transport],
        *,
        label: str,
        name: str | None = None,
        prefix: str = "",
        timeout: float | None = None,
        strict: bool = False,
        connect_timeout: float = 30.0,
        extra_arguments: bool = False,
    ):
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        if connect_timeout <= 0:
            raise ValueError(f"connect_timeout must be positive, got {connect_timeout!r}")
        self._transport = transport
        self._label = label
        self._name = name
        self.prefix = prefix
        self.timeout = timeout
        self.strict = strict
        self.connect_timeout = connect_timeout
        self.extra_arguments = extra_arguments
        self._connection: Connection | None = None
        self._reported_name: str | None = None
        self._entered = False
        self._lock = asyncio.Lock()

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        *,
        name: str | None = None,
        prefix: str = "",
        timeout: float | None = None,
        strict: bool = False,
        connect_timeout: float = 30.0,
        extra_arguments: bool = False,
    ) -> "MCPServer":
        """A server run as a child process, speaking MCP over its stdin and stdout. `env` is
        added to a minimal inherited environment (PATH, HOME, ...), as the SDK does."""
        return cls(
            lambda: stdio_transport(command, args, env, cwd),
            label=" ".join([Path(command).name, *args]),
            name=name,
            prefix=prefix,
            timeout=timeout,
            strict=strict,
            connect_timeout=connect_timeout,
            extra_arguments=extra_arguments,
        )

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        prefix: str = "",
        timeout: float | None = None,
        strict: bool = False,
        connect_timeout: float = 30.0,
        extra_arguments: bool = False,
    ) -> "MCPServer":
        """A server reached over streamable HTTP at `url`, with `headers` on every request."""
        return cls(
            lambda: http_transport(url, headers),
            label=url,
            name=name,
            prefix=prefix,
            timeout=timeout,
            strict=strict,
            connect_timeout=connect_timeout,
            extra_arguments=extra_arguments,
        )

    @property
    def name(self) -> str:
        return self._name or self._reported_name or self._label

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r})"

    # --- lifetime -----------------------------------------------------------------------------

    async def __aenter__(self) -> "MCPServer":
        if self._entered:
            raise RuntimeError(f"{self!r} is already in use by an `async with` block")
        self._entered = True
        try:
            await self._live()
        except BaseException:
            self._entered = False
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._entered = False
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    async def _live(self) -> Connection:
        """The connection, (re)opened if the server has gone."""
        if not self._entered:
            raise MCPConnectError(self.name, f"{self!r} is not connected: use it inside `async with server:`")
        async with self._lock:
            if self._connection is None or self._connection.ended:
                lost, self._connection = self._connection, None
                if lost is not None:
                    await lost.close()  # reaps what is left of it
                self._connection = await self._connect()
            return self._connection

    async def _connect(self) -> Connection:
        try:
            connection = await Connection.open(self._transport(), self.connect_timeout)
        except TimeoutError:
            raise MCPConnectError(
                self.name, f"MCP server {self.name!r} did not connect and initialise within {self.connect_timeout:g} s"
            ) from None
        except Exception as exc:
            raise MCPConnectError(self.name, f"MCP server {self.name!r} failed to connect: {_reason(exc)}") from exc
        info = connection.client.server_info
        self._reported_name = info.name if info is not None and info.name else None
        return connection

    # --- tools --------------------------------------------------------------------------------

    async def list_tools(self) -> list[Tool]:
        """The server's tools, each built with `Tool.from_mcp` (a schema the grammar cannot
        compile, or cannot enforce with `strict`, raises `ToolDefinitionError` naming the tool,
        keyword and place)."""
        connection = await self._live()
        try:
            async with asyncio.timeout(self.connect_timeout):
                entries = await _listing(connection)
        except TimeoutError:
            raise MCPConnectError(
                self.name, f"MCP server {self.name!r} did not list its tools within {self.connect_timeout:g} s"
            ) from None
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                connection.mark_ended()
                raise MCPConnectError(self.name, f"MCP server {self.name!r} was lost while listing its tools") from exc
            raise MCPProtocolError(self.name, None, exc.message, exc.code) from exc
        except pydantic.ValidationError as exc:
            raise MCPProtocolError(self.name, None, f"invalid tools/list result: {exc}") from exc
        tools = [self._tool(entry) for entry in entries]
        unique_names((self, t) for t in tools)
        return tools

    def _tool(self, entry: mcp_types.Tool) -> Tool:
        spec = entry.model_dump(mode="json", by_alias=True, exclude_none=True)
        spec["name"] = self.prefix + entry.name
        if not self.extra_arguments:
            spec["inputSchema"] = _declared_arguments_only(entry.input_schema)
        hints = entry.annotations
        # MCP's hints default to "may act again": only a tool declared read-only or idempotent
        # lets the agent answer an equal call with the earlier result.
        idempotent = bool(hints and (hints.read_only_hint or hints.idempotent_hint))
        return Tool.from_mcp(
            spec, self._caller(entry.name, spec["name"]), strict=self.strict, timeout=self.timeout, idempotent=idempotent
        )

    def _caller(self, remote: str, visible: str) -> Callable[[dict[str, Any], RunContext[Any]], Awaitable[Any]]:
        async def call(arguments: dict[str, Any], context: RunContext[Any]) -> Any:
            return await self._call(remote, visible, arguments, context)

        return call

    async def _call(self, remote: str, visible: str, arguments: dict[str, Any], context: RunContext[Any]) -> Any:
        """One `tools/call`: the result's value, or the typed error the agent feeds back."""
        connection = await self._live()
        try:
            result = await connection.client.call_tool(remote, arguments)
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                connection.mark_ended()
                raise MCPServerLost(self.name, visible, messages=list(context.messages), usage=context.usage) from exc
            raise MCPProtocolError(self.name, visible, exc.message, exc.code) from exc
        except (RuntimeError, pydantic.ValidationError) as exc:  # the SDK's checks of the result
            raise MCPProtocolError(self.name, visible, f"invalid result: {exc}") from exc
        if result.is_error:
            raise MCPToolError(self.name, visible, content_text(result.content))
        return result_value(result)


async def tools_of(*servers: MCPServer) -> list[Tool]:
    """The tools of every server, in order. Two tools of one name are an
    `MCPToolNameCollision` naming both servers (give one a `prefix`)."""
    listed = [(server, t) for server in servers for t in await server.list_tools()]
    unique_names(listed)
    return [t for _, t in listed]


def unique_names(tools: Iterable[tuple[MCPServer, Tool]]) -> None:
    owners: dict[str, MCPServer] = {}
    for server, t in tools:
        if t.name in owners:
            raise MCPToolNameCollision(t.name, owners[t.name].name, server.name)
        owners[t.name] = server


async def _listing(connection: Connection) -> list[mcp_types.Tool]:
    entries: list[mcp_types.Tool] = []
    cursor = None
    for _ in range(MAX_TOOL_PAGES):
        page = await connection.client.list_tools(cursor=cursor)
        entries.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return entries


_COMPOSITION = frozenset({"allOf", "anyOf", "oneOf", "not", "$ref", "$dynamicRef", "if", "dependentSchemas", "dependencies"})
_OPENNESS = frozenset({"additionalProperties", "patternProperties", "unevaluatedProperties"})


def _declared_arguments_only(schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments schema with its top-level object closed to undeclared keys, where it
    declares properties and says nothing of others. Only a narrowing: every value it admits,
    the server's schema admits too. Left as it is where composition keywords could declare
    keys elsewhere."""
    if "properties" not in schema or (_OPENNESS | _COMPOSITION) & schema.keys():
        return schema
    return {**schema, "additionalProperties": False}


def _reason(exc: BaseException) -> str:
    """The innermost cause worth showing (the SDK's task groups wrap errors in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
