"""An MCP `tools/call` result as the value a tool call returns, which the agent renders for the
model: the structured content where the server gives it (a JSON value, kept typed on the
call's record), else the content blocks as text. A text model cannot read images, audio or
binary resources, so those are described by type and size rather than dropped silently."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mcp import types as mcp_types


def result_value(result: mcp_types.CallToolResult) -> Any:
    """What a successful call returns: structured content, else its content as text."""
    if result.structured_content is not None:
        return result.structured_content
    return content_text(result.content)


def content_text(blocks: list[mcp_types.ContentBlock]) -> str:
    """Content blocks as one text, in order, blank-line separated."""
    return "\n\n".join(_block_text(block) for block in blocks)


def _block_text(block: mcp_types.ContentBlock) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{block.type}: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        mime = resource.mime_type or "binary"
        return f"[resource {resource.uri}: {mime}, {_decoded_size(resource.blob)} bytes]"
    if isinstance(block, mcp_types.ResourceLink):
        about = f": {block.description}" if block.description else ""
        return f"[resource link {block.uri} ({block.name}){about}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return len(data)
