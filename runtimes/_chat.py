"""Rendering a chat with the model's own Jinja2 template, tools included.

Rendered the way Hugging Face Transformers and llama-cpp-python's Jinja2ChatFormatter do
(sandboxed environment, trim_blocks, lstrip_blocks, `tojson` without ASCII escaping,
`add_generation_prompt=True`), so the model sees the prompt format it was trained on. A
template that takes a `tools` variable gets the tools; any other gets a system message that
lists them and says exactly how to write a call.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from ._protocol import ToolCallEnvelope


_PYTHONIC = re.compile(r"\[\s*func_name\w*\s*\(")


def tool_call_envelope(template: str | None) -> ToolCallEnvelope:
    """How a model with this chat template writes a tool call: "hermes" when the template
    knows `<tool_call>` tags, "python" when it asks for a list of Python calls
    (`[func_name1(params_name1=params_value1, ...)]`, as pythonic tool templates do), else a
    bare JSON object ("json")."""
    if template and "<tool_call>" in template:
        return "hermes"
    if template and _PYTHONIC.search(template):
        return "python"
    return "json"


# A JSON key the template writes, followed by a blank: `{"name": ` (or escaped inside a string).
_SPACED_KEY = re.compile(r'\\?"\w+\\?": ')


def json_separators(template: str | None) -> tuple[str, str] | None:
    """How a model with this chat template was shown JSON: `json.dumps`'s separators
    (`", "`, `": "`) where the template renders values with `tojson` or writes a key followed
    by a blank (tool templates do both), None where it shows no JSON (then a model has no
    form of its own, and grammars keep their compact default)."""
    if template and ("tojson" in template or _SPACED_KEY.search(template)):
        return (", ", ": ")
    return None


_PYTHON_LIST_INSTRUCTIONS = (
    "You can call the tools below. Answer a request with the calls it needs, as a Python list: "
    "[tool_name(argument=value, ...)] for one call, [tool_name(...), tool_name(...)] for several. "
    "Call a tool only for what the request asks. If no tool fits, or the request lacks an argument "
    "a tool needs, say so in plain words. Otherwise answer with the list alone and nothing else."
)
"""How a list of Python calls is asked for. Shown one call and two, a small model writes one
where one is asked and several where several are (an example of two calls alone made it write
two for every request); told what a call is for, it calls no tool the request does not need."""


def tool_instructions(tools: list[dict[str, Any]], envelope: ToolCallEnvelope) -> str:
    """A system-message text that lists `tools` (name, description, argument schema) and the
    exact form of a call, for models whose template has no tool support."""
    if envelope == "python":
        lines = [_PYTHON_LIST_INSTRUCTIONS, "", "Tools:"]
    else:
        example = '{"name":"<tool name>","arguments":<arguments as a JSON object>}'
        if envelope == "hermes":
            example = f"<tool_call>{example}</tool_call>"
        lines = [
            "You can call the tools below. To call a tool, answer with exactly this form and nothing else:",
            example,
            "",
            "Tools:",
        ]
    for tool in tools:
        function = tool.get("function", tool)
        lines.append(f"- {function['name']}: {function.get('description', '').strip()}")
        schema = function.get("parameters", {"type": "object", "properties": {}})
        lines.append(f"  arguments (JSON Schema): {json.dumps(schema, ensure_ascii=False)}")
    return "\n".join(lines)


def with_tool_instructions(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], envelope: ToolCallEnvelope
) -> list[dict[str, Any]]:
    """`messages` with the tool listing merged into the leading system message (or added as
    one): many templates accept a system message only in first place."""
    text = tool_instructions(tools, envelope)
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0])
        first["content"] = f"{first.get('content') or ''}\n\n{text}".lstrip()
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


class ChatTemplate:
    """A compiled chat template with the special-token texts it may refer to."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = ""):
        import jinja2
        import jinja2.ext
        from jinja2 import meta
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        environment = ImmutableSandboxedEnvironment(
            loader=jinja2.BaseLoader(),
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[jinja2.ext.loopcontrols],
        )
        environment.filters["tojson"] = _tojson
        try:
            parsed = environment.parse(source)
        except jinja2.TemplateSyntaxError as exc:
            raise ValueError(f"chat template does not parse: {exc}") from exc
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.takes_tools = "tools" in meta.find_undeclared_variables(parsed)
        self.envelope = tool_call_envelope(source)
        self._template = environment.from_string(source)

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
        """The prompt text for `messages`, ending where the assistant's answer begins."""
        if tools and not self.takes_tools:
            messages = with_tool_instructions(messages, tools, self.envelope)
        return self._template.render(
            messages=messages,
            tools=tools or None,
            add_generation_prompt=True,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            raise_exception=_raise_exception,
            strftime_now=lambda fmt: datetime.now().strftime(fmt),
        )


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _raise_exception(message: str) -> None:
    raise ValueError(f"chat template refused the messages: {message}")
