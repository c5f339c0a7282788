"""An MCP server for the tests, written with the official SDK:

    python mcp_fixture_server.py stdio
    python mcp_fixture_server.py http PORT     (on 127.0.0.1 only)

Its tools cover what a client must handle: text, structured content, images and embedded
resources, an `isError` result, a JSON-RPC error, the request's HTTP headers, a call slow
enough to be cancelled or cut by killing the server, its own process id (so a test can kill it and check that it is gone),
and a stray process started out of its reach (so a test can check that it stops with the server all the same).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Literal

import anyio
from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import INVALID_PARAMS, EmbeddedResource, TextResourceContents, ToolAnnotations
from pydantic import BaseModel

PNG_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(24)

server = MCPServer("fixture")
read_only = ToolAnnotations(read_only_hint=True)


class Forecast(BaseModel):
    city: str
    temperature_c: float
    sky: str


@server.tool(annotations=read_only, structured_output=False)
def echo(text: str) -> str:
    """Give the text back."""
    return text


@server.tool(annotations=read_only)
def forecast(city: str) -> Forecast:
    """Today's forecast for a city."""
    return Forecast(city=city, temperature_c=18.5, sky="light rain")


@server.tool()
def divide(a: float, b: float) -> float:
    """Divide a by b (fails for b = 0)."""
    if b == 0:
        raise ToolError("cannot divide by zero")
    return a / b


@server.tool(structured_output=False)
def picture() -> list[object]:
    """A caption, a picture and a note, as three content blocks."""
    note = EmbeddedResource(
        type="resource", resource=TextResourceContents(uri="note://caption", mime_type="text/plain", text="a tiny square")
    )
    return ["a square", Image(data=PNG_BYTES, format="png"), note]


@server.tool()
def tag(tags: set[str]) -> str:
    """Tags, each at most once (a constraint the grammar cannot enforce while decoding)."""
    return ",".join(sorted(tags))


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after some seconds."""
    await anyio.sleep(seconds)
    return "done"


@server.tool(structured_output=False)
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP header of this request ("" if absent, or over stdio)."""
    return (ctx.headers or {}).get(name.lower(), "")


@server.tool()
def refuse(reason: str) -> str:
    """Answer with a JSON-RPC error rather than a result."""
    raise MCPError(code=INVALID_PARAMS, message=reason)


@server.tool(structured_output=False)
def pid() -> int:
    """This server's process id."""
    return os.getpid()


STRAY = """
import os, signal, sys, time
if sys.argv[1] == "daemon" and os.fork():
    os._exit(0)  # the daemon's way: its parent exits at once, so it is nobody's child
os.setsid()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(os.getpid(), flush=True)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
time.sleep(60)  # ends by itself, so a failing test leaves it running a minute at most
"""


@server.tool(structured_output=False)
def stray(mode: Literal["session", "daemon"]) -> int:
    """Start a process in a session of its own that ignores SIGTERM and ends by itself after
    60 s ("daemon": through a parent that exits at once); its process id, once it ignores SIGTERM."""
    child = subprocess.Popen([sys.executable, "-c", STRAY, mode], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert child.stdout is not None
    with child.stdout:
        pid = int(child.stdout.readline())
    if mode == "daemon":
        child.wait()
    return pid


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.settings.log_level = "WARNING"
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
