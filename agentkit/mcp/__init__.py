"""Tools from MCP servers, on the official `mcp` SDK (`pip install 'agentkit[mcp]'`).

    from agentkit import Agent
    from agentkit.mcp import MCPServer

    async with MCPServer.stdio("uvx", ["mcp-server-time"]) as time:
        agent = Agent(await time.list_tools())
        result = await agent.run("What time is it in Paris?")

Each server tool becomes a `Tool` built from its input schema, so the model's calls to it are
held by the same grammar as any other tool's, validated, then sent to the server. A failed
call (`MCPToolError`, `MCPProtocolError`, `ToolTimeout`) goes back to the model like any tool
error; a server lost mid-call is an `MCPServerLost`, which carries the run's messages.
"""

from ._errors import (
    MCPConnectError,
    MCPProtocolError,
    MCPServerError,
    MCPServerLost,
    MCPToolError,
    MCPToolNameCollision,
)
from ._server import MCPServer, tools_of

__all__ = [
    "MCPConnectError",
    "MCPProtocolError",
    "MCPServer",
    "MCPServerError",
    "MCPServerLost",
    "MCPToolError",
    "MCPToolNameCollision",
    "tools_of",
]
