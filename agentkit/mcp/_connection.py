"""One live session with an MCP server, held by a task of its own.

The SDK's transports and sessions are anyio task groups, which the task that enters them must
also leave, while tool calls come from whichever task the agent runs them in. So a connection
is entered, held and left by one task; calls only send requests through it. Shutting down goes
through anyio cancellation, never a bare `Task.cancel()`, so the SDK's shielded shutdown (which
stops the server process) always runs to its end.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client

SHUTDOWN_GRACE = 10.0
"""Seconds to wait for a shutdown hurried by a second cancellation (the SDK bounds each of its
own steps: closing stdin, SIGTERM, SIGKILL, about six seconds in all)."""

SUPERVISOR = Path(__file__).with_name("_supervisor.py")


def stdio_transport(
    command: str, args: Sequence[str], env: Mapping[str, str] | None, cwd: str | Path | None
) -> Transport:
    """The SDK's stdio transport: a child process in its own process group, stopped when the
    transport closes.

    The SDK signals that group only when the server does not exit by itself, and a process that
    moved to a group or session of its own is never in it. So on Linux the server runs under
    `_supervisor`, which outlives it only to stop every process it left."""
    if sys.platform == "linux":
        if not _runnable(command, {**get_default_environment(), **(env or {})}.get("PATH"), cwd):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)  # as the SDK's spawn says
        command, args = sys.executable, ["-I", str(SUPERVISOR), command, *args]
    params = StdioServerParameters(command=command, args=list(args), env=dict(env) if env else None, cwd=cwd)
    return stdio_client(params)


def _runnable(command: str, path: str | None, cwd: str | Path | None) -> bool:
    """Whether `command` names a program to run: found on `path`, or a file where it points
    (from `cwd`, where the server starts)."""
    if os.sep not in command:
        return shutil.which(command, path=path) is not None
    where = Path(cwd or ".") / command
    return where.is_file() and os.access(where, os.X_OK)


@asynccontextmanager
async def http_transport(url: str, headers: Mapping[str, str] | None) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport, with `headers` on every request (the timeouts are
    the SDK's defaults: 30 s to connect, 300 s between reads of a held-open stream)."""
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with httpx2.AsyncClient(headers=dict(headers or {}), timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


class Connection:
    """A connected, initialised `mcp.Client`; `ended` once the server's side has closed.
    Made by `Connection.open`."""

    def __init__(self, transport: Transport):
        self._wake = asyncio.Event()
        self._connected = asyncio.Event()
        self._scope = anyio.CancelScope()
        self._ended = False
        self._failure: Exception | None = None
        self.client = Client(_signalling_end(transport, self.mark_ended))
        self._task = asyncio.create_task(self._hold(), name="agentkit MCP connection")

    @classmethod
    async def open(cls, transport: Transport, timeout: float) -> "Connection":
        """Connect and initialise within `timeout` seconds. Raises what connecting raised
        (`TimeoutError` past the timeout); a failed or cancelled attempt leaves nothing running."""
        connection = cls(transport)
        try:
            async with asyncio.timeout(timeout):
                await connection._connected.wait()
        except BaseException:
            await connection.close()
            raise
        if connection._failure is not None:
            raise connection._failure
        return connection

    @property
    def ended(self) -> bool:
        """Whether the server has gone (exited, or dropped the connection): no call can succeed."""
        return self._ended or self._task.done()

    async def close(self) -> None:
        """Leave the session and stop the transport (for stdio: the server process). If the
        caller is cancelled meanwhile, the shutdown is hurried, still waited for (bounded), and
        the cancellation goes on."""
        self._wake.set()
        if not self._connected.is_set():
            self._scope.cancel()  # still connecting: only cancellation interrupts the handshake
        try:
            await asyncio.shield(self._task)
        except asyncio.CancelledError:
            self._scope.cancel()
            await asyncio.wait({self._task}, timeout=SHUTDOWN_GRACE)
            raise

    async def _hold(self) -> None:
        try:
            with self._scope:
                async with self.client:
                    self._connected.set()
                    await self._wake.wait()
        except Exception as exc:  # the opener raises a failure to connect; one in closing only ends it
            self._failure = exc
        finally:
            self._connected.set()

    def mark_ended(self) -> None:
        """The server has gone (its stream closed, or a call's answer can no longer come): the
        session is left, and the next call opens a new one."""
        self._ended = True
        self._wake.set()


@asynccontextmanager
async def _signalling_end(transport: Transport, on_end: Callable[[], None]) -> AsyncIterator[Any]:
    async with transport as (read_stream, write_stream):
        yield _EndSignallingStream(read_stream, on_end), write_stream


class _EndSignallingStream:
    """The server-to-client stream, calling `on_end` when the server's side closes, so a server
    that exits between calls is noticed before the next call is sent."""

    def __init__(self, inner: Any, on_end: Callable[[], None]):
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> "_EndSignallingStream":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "_EndSignallingStream":
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)
