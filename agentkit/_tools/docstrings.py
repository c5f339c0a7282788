"""Docstring parsing: the tool description and one description per parameter, from Google,
NumPy or Sphinx (reST field list) style docstrings. Plain docstrings give a description only."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_GOOGLE_PARAM_HEADERS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "kwargs"}
_GOOGLE_HEADERS = _GOOGLE_PARAM_HEADERS | {
    "returns", "return", "yields", "yield", "raises", "raise", "examples", "example", "note", "notes",
    "attributes", "see also", "warning", "warnings", "todo", "references", "other parameters",
}
_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_GOOGLE_HEADER = re.compile(r"^(?P<name>[A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_ITEM = re.compile(r"^(?P<name>\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(?P<desc>.*)$")
_NUMPY_ITEM = re.compile(r"^(?P<names>\*{0,2}\w+(\s*,\s*\*{0,2}\w+)*)\s*(:\s*(?P<type>.*))?$")
_SPHINX_FIELD = re.compile(r"^:(?P<kind>\w+)(?P<args>(\s+[^:]+)?):\s*(?P<desc>.*)$")


@dataclass(frozen=True)
class Docstring:
    """What a docstring says: `description` (the text before any section) and `params`."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> Docstring:
    """Parse `doc` in whichever of the three styles it is written (detected per section)."""
    if not doc or not doc.strip():
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    start = _first_section(lines)
    description = _join(lines[:start])
    params: dict[str, str] = {}
    i = start
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and _NUMPY_UNDERLINE.match(lines[i + 1]) and line.strip():
            end = _numpy_section_end(lines, i + 2)
            if line.strip().lower() in {"parameters", "other parameters", "params", "keyword arguments"}:
                params.update(_numpy_params(lines[i + 2 : end]))
            i = end
        elif _SPHINX_FIELD.match(line.strip()):
            end = _sphinx_field_end(lines, i + 1)
            _sphinx_field(line.strip(), lines[i + 1 : end], params)
            i = end
        elif (m := _GOOGLE_HEADER.match(line)) and m["name"].strip().lower() in _GOOGLE_HEADERS:
            end = _google_section_end(lines, i + 1)
            if m["name"].strip().lower() in _GOOGLE_PARAM_HEADERS:
                params.update(_google_params(lines[i + 1 : end]))
            i = end
        else:
            i += 1
    return Docstring(description, params)


def _first_section(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        stripped = line.strip()
        if i + 1 < len(lines) and stripped and _NUMPY_UNDERLINE.match(lines[i + 1]):
            return i
        if _SPHINX_FIELD.match(stripped):
            return i
        m = _GOOGLE_HEADER.match(line)
        if m and m["name"].strip().lower() in _GOOGLE_HEADERS:
            return i
    return len(lines)


def _join(lines: list[str]) -> str:
    """Paragraphs kept apart by one blank line; inside a paragraph, runs of blanks and line
    breaks become one space (docstrings are wrapped for the source, not for the model)."""
    paragraphs, current = [], []
    for line in lines:
        if line.strip():
            current.append(" ".join(line.split()))
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_section_end(lines: list[str], i: int) -> int:
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > 0):
        i += 1
    return i


def _google_params(body: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    base = min((_indent(line) for line in body if line.strip()), default=0)
    name, desc = None, []
    for line in body:
        if line.strip() and _indent(line) == base and (m := _GOOGLE_ITEM.match(line.strip())):
            if name:
                out[name] = _join(desc)
            name, desc = m["name"].lstrip("*"), [m["desc"]]
        elif name:
            desc.append(line)
    if name:
        out[name] = _join(desc)
    return out


def _numpy_section_end(lines: list[str], i: int) -> int:
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and _NUMPY_UNDERLINE.match(lines[i + 1]):
            return i
        i += 1
    return i


def _numpy_params(body: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    names: list[str] = []
    desc: list[str] = []

    def flush() -> None:
        for n in names:
            out[n] = _join(desc)

    for line in body:
        if line.strip() and _indent(line) == 0 and (m := _NUMPY_ITEM.match(line.strip())):
            flush()
            names = [n.strip().lstrip("*") for n in m["names"].split(",")]
            desc = []
        elif names:
            desc.append(line)
    flush()
    return out


def _sphinx_field_end(lines: list[str], i: int) -> int:
    while i < len(lines) and lines[i].strip() and not _SPHINX_FIELD.match(lines[i].strip()):
        i += 1
    return i


def _sphinx_field(line: str, more: list[str], params: dict[str, str]) -> None:
    m = _SPHINX_FIELD.match(line)
    assert m is not None
    if m["kind"] not in {"param", "parameter", "arg", "argument", "key", "keyword"}:
        return
    words = m["args"].split()
    if words:
        params[words[-1].lstrip("*")] = _join([m["desc"], *more])
