"""Server-sent events: the `data:` payloads of an event stream, one per event."""

from __future__ import annotations

from collections.abc import AsyncIterator


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """Each event's data (multi-line data joined with newlines), as the SSE format defines it.

    Comment lines (":" first, e.g. keep-alive pings) and fields other than `data` are skipped;
    an event ends at a blank line. An event the stream ends inside of is dropped, as the
    format requires: it may be cut short.
    """
    data: list[str] = []
    async for line in lines:
        line = line.rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
