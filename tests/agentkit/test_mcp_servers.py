"""Tools from real MCP servers: the reference `mcp-server-time` over stdio, and a server written
with the SDK (`mcp_fixture_server.py`) over stdio and over streamable HTTP on 127.0.0.1.

Every wait is bounded, every server started here is stopped in teardown, and each test checks
that it leaves no child process running.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("mcp_server_time")

from agentkit import Agent, RunError, ToolArgumentsError, ToolDefinitionError, ToolTimeout  # noqa: E402
from agentkit.mcp._results import result_value  # noqa: E402
from agentkit.mcp import (  # noqa: E402
    MCPConnectError,
    MCPProtocolError,
    MCPServer,
    MCPServerLost,
    MCPToolError,
    MCPToolNameCollision,
    tools_of,
)
from mcp import types  # noqa: E402
from runtimes.testing import ScriptedRuntime  # noqa: E402

FIXTURE = str(Path(__file__).with_name("mcp_fixture_server.py"))
TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
WAIT = 30.0  # seconds: the bound on any one step (a loaded CI machine starts Python slowly)


def call(name: str, arguments: dict[str, object]) -> str:
    return json.dumps({"name": name, "arguments": arguments}, separators=(",", ":"))


def time_server() -> MCPServer:
    return MCPServer.stdio(TIME_SERVER[0], TIME_SERVER[1:])


def fixture_server(**options: Any) -> MCPServer:
    return MCPServer.stdio(sys.executable, [FIXTURE, "stdio"], **options)


# --- processes ----------------------------------------------------------------------------------


def running_children() -> set[int]:
    """This process's children that are still running (not exited, not zombies)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == os.getpid() and state != "Z":
            found.add(int(entry))
    return found


def is_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def gone_within(pids: set[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(is_running(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    before = running_children()
    yield
    left = running_children() - before
    assert gone_within(left, 10), f"processes left running: {sorted(left)}"


@pytest.fixture
def http_server() -> Iterator["HttpServer"]:
    server = HttpServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


class HttpServer:
    """The fixture server over streamable HTTP, on a free port of 127.0.0.1."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, FIXTURE, "http", str(self.port)])
        deadline = time.monotonic() + WAIT
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the fixture HTTP server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=WAIT)
            self.process = None


async def bounded(work, seconds: float = WAIT):  # type: ignore[no-untyped-def]
    return await asyncio.wait_for(work, seconds)


@pytest.fixture
async def fixture_tools() -> AsyncIterator[dict[str, object]]:
    async with fixture_server() as server:
        yield {t.name: t for t in await bounded(server.list_tools())}


# --- the reference time server, over stdio ------------------------------------------------------


async def test_time_server_tools_call_the_server_and_stop_with_the_block() -> None:
    before = running_children()
    async with time_server() as server:
        started = running_children() - before
        assert len(started) == 1 and server.name == "mcp-time"
        tools = {t.name: t for t in await bounded(server.list_tools())}
        assert set(tools) == {"get_current_time", "convert_time"}
        now = tools["get_current_time"]
        assert now.schema["required"] == ["timezone"] and now.idempotent  # read-only, per its annotations
        answer = await bounded(now.call(now.validate({"timezone": "Europe/Paris"})))
        assert answer["timezone"] == "Europe/Paris"
        assert datetime.fromisoformat(answer["datetime"]).utcoffset().total_seconds() in (3600, 7200)
        with pytest.raises(MCPToolError, match="Invalid timezone") as error:
            await bounded(now.call({"timezone": "Nowhere/Atlantis"}))
        assert error.value.tool == "get_current_time" and error.value.server == "mcp-time"
    assert gone_within(started, 10)


async def test_agent_receives_the_time_servers_real_answer() -> None:
    async with time_server() as server:
        tools = await bounded(server.list_tools())
        runtime = ScriptedRuntime([call("get_current_time", {"timezone": "Europe/Paris"}), "It is morning in Paris."])
        result = await bounded(Agent(tools, runtime).run("What time is it in Europe/Paris?"))
    [record] = result.tool_calls
    assert record.ok and record.arguments == {"timezone": "Europe/Paris"}
    assert record.result["timezone"] == "Europe/Paris" and set(record.result) == {"timezone", "datetime", "day_of_week", "is_dst"}
    [fed_back] = [m for m in result.messages if m["role"] == "tool"]
    assert json.loads(fed_back["content"]) == record.result
    assert result.output == "It is morning in Paris."


async def test_agent_feeds_an_is_error_result_back_to_the_model() -> None:
    async with time_server() as server:
        tools = await bounded(server.list_tools())
        runtime = ScriptedRuntime([call("get_current_time", {"timezone": "Mars/Olympus"}), "I do not know that place."])
        result = await bounded(Agent(tools, runtime).run("What time is it in Mars/Olympus?"))
    [record] = result.tool_calls
    assert isinstance(record.error, MCPToolError)
    [fed_back] = [m for m in result.messages if m["role"] == "tool"]
    assert fed_back["content"].startswith("Error: MCPToolError:") and "Invalid timezone" in fed_back["content"]


# --- what results and errors become ------------------------------------------------------------


async def test_results_become_text_structured_values_and_described_media(fixture_tools) -> None:  # type: ignore[no-untyped-def]
    assert await bounded(fixture_tools["echo"].call({"text": "héllo"})) == "héllo"
    assert await bounded(fixture_tools["forecast"].call({"city": "Paris"})) == {
        "city": "Paris", "temperature_c": 18.5, "sky": "light rain",
    }
    picture = await bounded(fixture_tools["picture"].call({}))
    assert picture == "a square\n\n[image: image/png, 32 bytes]\n\n[resource note://caption]\na tiny square"


def test_media_resources_and_links_are_described_for_a_text_model() -> None:
    blocks = [
        types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
        types.EmbeddedResource(
            type="resource", resource=types.BlobResourceContents(uri="file:///a.bin", blob="AAAAAA==")
        ),
        types.ResourceLink(type="resource_link", uri="file:///notes.md", name="notes", description="the notes"),
    ]
    assert result_value(types.CallToolResult(content=blocks)) == (
        "[audio: audio/wav, 3 bytes]\n\n[resource file:///a.bin: binary, 4 bytes]\n\n"
        "[resource link file:///notes.md (notes): the notes]"
    )
    assert result_value(types.CallToolResult(content=[], structured_content=[1, 2])) == [1, 2]


async def test_is_error_and_protocol_errors_are_typed(fixture_tools) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(MCPToolError, match="cannot divide by zero"):
        await bounded(fixture_tools["divide"].call({"a": 1, "b": 0}))
    with pytest.raises(MCPProtocolError, match="not today") as error:
        await bounded(fixture_tools["refuse"].call({"reason": "not today"}))
    assert (error.value.code, error.value.tool, error.value.server) == (-32602, "refuse", "fixture")


async def test_unenforceable_schemas_follow_the_lenient_and_strict_rules() -> None:
    async with fixture_server() as server:
        tag = {t.name: t for t in await bounded(server.list_tools())}["tag"]
        assert tag.constraints["tags"].after_decoding == ("uniqueItems",)
        with pytest.raises(ToolArgumentsError) as error:
            tag.validate({"tags": ["a", "a"]})
        assert error.value.violations[0].keyword == "uniqueItems"
    async with fixture_server(strict=True) as server:
        with pytest.raises(ToolDefinitionError) as refused:
            await bounded(server.list_tools())
    assert (refused.value.tool, refused.value.keyword, refused.value.pointer) == ("tag", "uniqueItems", "/properties/tags")


async def test_only_declared_arguments_unless_extra_arguments_are_allowed() -> None:
    async with fixture_server() as server:
        echo = {t.name: t for t in await bounded(server.list_tools())}["echo"]
        assert echo.schema["additionalProperties"] is False
        with pytest.raises(ToolArgumentsError) as error:
            echo.validate({"text": "hi", "noise": 1})
        assert error.value.violations[0].keyword == "additionalProperties"
    async with fixture_server(extra_arguments=True) as server:
        echo = {t.name: t for t in await bounded(server.list_tools())}["echo"]
        assert "additionalProperties" not in echo.schema
        assert await bounded(echo.call(echo.validate({"text": "hi", "noise": 1}))) == "hi"


async def test_tool_name_collisions_name_both_servers_and_a_prefix_parts_them() -> None:
    async with fixture_server(name="left") as left, fixture_server(name="right") as right:
        with pytest.raises(MCPToolNameCollision) as error:
            await bounded(tools_of(left, right))
        assert error.value.servers == ("left", "right") and "'left' and 'right'" in str(error.value)
    async with fixture_server(name="left") as left, fixture_server(name="right", prefix="right_") as right:
        tools = {t.name: t for t in await bounded(tools_of(left, right))}
        assert {"echo", "right_echo"} <= set(tools)
        left_pid, right_pid = [int(await bounded(tools[n].call({}))) for n in ("pid", "right_pid")]
        assert left_pid != right_pid
        runtime = ScriptedRuntime([call("right_echo", {"text": "hi"}), "Done."])
        result = await bounded(Agent(list(tools.values()), runtime).run("Echo hi."))
        assert result.tool_calls[0].result == "hi"


# --- timeouts, lost servers, cancellation ------------------------------------------------------


async def test_a_call_past_its_timeout_is_a_tool_timeout_and_the_server_goes_on() -> None:
    async with fixture_server(timeout=0.5) as server:
        tools = {t.name: t for t in await bounded(server.list_tools())}
        with pytest.raises(ToolTimeout):
            await bounded(tools["slow"].call({"seconds": 20}))
        assert await bounded(tools["echo"].call({"text": "still here"})) == "still here"


async def test_a_stdio_server_killed_mid_call_is_lost_then_restarted() -> None:
    async with fixture_server() as server:
        tools = {t.name: t for t in await bounded(server.list_tools())}
        first = int(await bounded(tools["pid"].call({})))
        pending = asyncio.create_task(tools["slow"].call({"seconds": 60}))
        await asyncio.sleep(0.3)
        os.kill(first, signal.SIGKILL)
        with pytest.raises(MCPServerLost) as error:
            await bounded(pending, 10)
        assert error.value.tool == "slow" and error.value.messages == []
        second = int(await bounded(tools["pid"].call({})))
        assert second != first and gone_within({first}, 10)
        os.kill(second, signal.SIGKILL)  # between calls: noticed before the next call is sent
        await asyncio.sleep(0.3)
        assert await bounded(tools["echo"].call({"text": "third"})) == "third"


async def test_an_http_server_killed_mid_call_is_lost_then_reconnected(http_server: HttpServer) -> None:
    async with MCPServer.http(http_server.url, headers={"X-Agent": "agentkit-test"}) as server:
        tools = {t.name: t for t in await bounded(server.list_tools())}
        assert await bounded(tools["header"].call({"name": "X-Agent"})) == "agentkit-test"
        pending = asyncio.create_task(tools["slow"].call({"seconds": 60}))
        await asyncio.sleep(0.3)
        http_server.stop()
        with pytest.raises(MCPServerLost):
            await bounded(pending, 10)
        http_server.start()
        assert await bounded(tools["echo"].call({"text": "back"})) == "back"


async def test_a_server_lost_mid_run_ends_the_run_with_its_messages() -> None:
    async with fixture_server() as server:
        tools = {t.name: t for t in await bounded(server.list_tools())}
        pid = int(await bounded(tools["pid"].call({})))
        runtime = ScriptedRuntime([call("slow", {"seconds": 60}), "Unreachable."])
        run = asyncio.create_task(Agent(list(tools.values()), runtime).run("Wait 60 seconds."))
        await asyncio.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(MCPServerLost) as error:
            await bounded(run, 10)
    assert isinstance(error.value, RunError)
    assert [m["role"] for m in error.value.messages] == ["user", "assistant"]


async def test_a_cancelled_call_leaves_the_server_usable(fixture_tools) -> None:  # type: ignore[no-untyped-def]
    pending = asyncio.create_task(fixture_tools["slow"].call({"seconds": 60}))
    await asyncio.sleep(0.3)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await bounded(pending, 10)
    assert await bounded(fixture_tools["echo"].call({"text": "next"})) == "next"


async def test_cancelling_inside_the_block_stops_the_server() -> None:
    started: set[int] = set()

    async def use() -> None:
        async with fixture_server() as server:
            tools = {t.name: t for t in await server.list_tools()}
            started.add(int(await tools["pid"].call({})))
            await tools["slow"].call({"seconds": 60})

    task = asyncio.create_task(use())
    while not started and not task.done():
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await bounded(task)
    assert started and gone_within(started, 10)


@pytest.mark.skipif(sys.platform != "linux", reason="the guarantee is Linux's (a child subreaper)")
@pytest.mark.parametrize("mode", ["session", "daemon"])
async def test_a_process_the_server_started_out_of_its_group_stops_with_the_block(mode: str) -> None:
    stray = 0
    try:
        async with fixture_server() as server:
            tools = {t.name: t for t in await bounded(server.list_tools())}
            stray = int(await bounded(tools["stray"].call({"mode": mode})))
            assert is_running(stray) and os.getsid(stray) == stray  # a session of its own, ignoring SIGTERM
        assert not is_running(stray)
    finally:
        if stray and is_running(stray):
            os.kill(stray, signal.SIGKILL)


async def test_cancelling_while_connecting_leaves_no_process() -> None:
    before = running_children()

    async def connect() -> None:
        async with fixture_server():
            raise AssertionError("cancelled before it connected")

    task = asyncio.create_task(connect())
    deadline = time.monotonic() + WAIT
    while not running_children() - before and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    spawned = running_children() - before
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await bounded(task)
    assert spawned and gone_within(spawned, 10)


# --- connecting -----------------------------------------------------------------------------


async def test_servers_that_cannot_start_or_be_reached_are_connect_errors() -> None:
    with pytest.raises(MCPConnectError, match="failed to connect"):
        await bounded(MCPServer.stdio("/nonexistent/mcp-server").__aenter__())
    with pytest.raises(MCPConnectError, match="failed to connect"):
        await bounded(MCPServer.stdio(sys.executable, ["-c", "pass"]).__aenter__())
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    with pytest.raises(MCPConnectError):
        await bounded(MCPServer.http(f"http://127.0.0.1:{closed_port}/mcp").__aenter__())
    with pytest.raises(MCPConnectError, match="within 0.5 s"):
        await bounded(MCPServer.stdio(sys.executable, ["-c", "import time; time.sleep(60)"], connect_timeout=0.5).__aenter__())


async def test_tools_outside_the_block_say_so() -> None:
    async with fixture_server() as server:
        echo = {t.name: t for t in await bounded(server.list_tools())}["echo"]
    with pytest.raises(MCPConnectError, match="async with"):
        await echo.call({"text": "late"})


def test_import_agentkit_does_not_import_the_sdk() -> None:
    code = "import sys, agentkit; assert 'mcp' not in sys.modules and 'agentkit.mcp' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=WAIT, cwd=Path(__file__).parents[2])


# --- the default model ---------------------------------------------------------------------------


@pytest.mark.model
async def test_the_default_model_calls_the_time_server(smollm2_gguf: Path) -> None:
    pytest.importorskip("llama_cpp")
    import runtimes

    async with time_server() as server:
        agent = Agent(
            await bounded(server.list_tools()),
            runtimes.default(),
            system_prompt="Use the tools to answer.",
            tool_choice="required",
            max_steps=2,
            max_tokens=160,
        )
        try:
            result = await bounded(agent.run("What is the current time in Europe/Paris?"), 600)
        except RunError as error:
            assert [m for m in error.messages if m["role"] == "tool"], "a required call must come before any limit"
            return
    assert result.tool_calls
    for record in result.tool_calls:
        assert not isinstance(record.error, ToolArgumentsError)
        if record.ok and record.call.name == "get_current_time":
            assert record.result["timezone"] == record.arguments["timezone"]
