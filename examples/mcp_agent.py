"""An agent whose tools come from an MCP server: the reference time server, `mcp-server-time`.

    pip install 'agentkit[mcp]' mcp-server-time
    python examples/mcp_agent.py ["What time is it in Tokyo?"]

The server runs as a child process for the length of the `async with` block. Its tools'
input schemas become the grammar every call of the model is held to, so each call parses and
validates before it is sent to the server; the server's answers go back to the model. Runs on
the embedded default model (SmolLM2-135M on llama.cpp), which may well pick odd arguments.
"""

from __future__ import annotations

import asyncio
import sys

from agentkit import Agent, FinalResult, RunError, ToolCallEvent, ToolResultEvent
from agentkit.mcp import MCPServer

TIME_SERVER = MCPServer.stdio(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"], timeout=10)


async def main(question: str) -> None:
    async with TIME_SERVER as server:
        agent = Agent(
            await server.list_tools(),
            system_prompt="You tell the time. Use the tools, then answer in one short sentence.",
            tool_choice="required",  # call a tool before answering
            max_steps=4,
            max_tokens=160,
        )
        print(f"user: {question}")
        try:
            async for event in agent.run_stream(question):
                if isinstance(event, ToolCallEvent):
                    print(f"call: {event.call.name}({event.call.arguments})")
                elif isinstance(event, ToolResultEvent):
                    outcome = event.record.result if event.record.ok else f"error: {event.record.error}"
                    print(f"  -> {outcome}")
                elif isinstance(event, FinalResult):
                    print(f"answer: {event.result.output.strip()}")
        except RunError as error:
            print(f"stopped: {type(error).__name__}: {error}")
            print(f"({len(error.messages)} messages so far are kept on the error)")


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What time is it in Tokyo? The timezone is Asia/Tokyo."))
