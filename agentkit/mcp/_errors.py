"""Typed errors of MCP servers. A tool call's error reaches the model as any tool error does;
`MCPServerLost` is also a `RunError`, so it carries the messages of the run it broke."""

from __future__ import annotations

from typing import Any

from .._errors import AgentkitError, RunError


class MCPServerError(AgentkitError):
    """Something went wrong with an MCP server; `server` names it."""

    def __init__(self, server: str, message: str):
        self.server = server
        super().__init__(message)


class MCPConnectError(MCPServerError):
    """The server could not be started, reached or initialised (`__cause__` says why), or was
    used outside its `async with` block."""


class MCPToolError(MCPServerError):
    """The server ran the tool and answered that it failed (an `isError` result): the message
    is the server's own text, so the model can read it and correct its call."""

    def __init__(self, server: str, tool: str, text: str):
        self.tool = tool
        self.text = text
        super().__init__(server, text or f"tool {tool!r} failed and the server gave no reason")


class MCPProtocolError(MCPServerError):
    """The server refused a request (a JSON-RPC error: `code`, `message`) or answered with a
    result that breaks the protocol or the tool's declared output schema (`code` None)."""

    def __init__(self, server: str, tool: str | None, message: str, code: int | None = None):
        self.tool = tool
        self.code = code
        self.message = message
        what = f"the call of {tool!r}" if tool else "the request"
        where = f" (JSON-RPC error {code})" if code is not None else ""
        super().__init__(server, f"MCP server {server!r} refused {what}: {message}{where}")


class MCPServerLost(MCPServerError, RunError):
    """The server exited or its connection dropped while a call was waiting for its answer.

    `messages` and `usage` are the run's so far, when the call was made by an agent (empty
    otherwise). The server is started or connected again on its next call."""

    def __init__(self, server: str, tool: str, *, messages: list[dict[str, Any]], usage: Any = None):
        self.server = server
        self.tool = tool
        RunError.__init__(
            self,
            f"MCP server {server!r} was lost during a call of {tool!r}: it exited or the connection closed",
            messages=messages,
            usage=usage,
        )


class MCPToolNameCollision(MCPServerError, ValueError):
    """Two servers (or one, twice) offer a tool of the same name; give one of them a `prefix`."""

    def __init__(self, name: str, first: str, second: str):
        self.name = name
        self.servers = (first, second)
        where = f"MCP servers {first!r} and {second!r} both offer" if first != second else f"MCP server {first!r} offers twice"
        super().__init__(
            second,
            f"{where} a tool named {name!r}; give one of them a prefix, e.g. MCPServer.stdio(..., prefix=\"{second}_\")",
        )
