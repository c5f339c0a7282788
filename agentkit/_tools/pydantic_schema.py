"""JSON Schemas of Python types, as pydantic makes them, with what pydantic's network types
check written into the schema, so the grammar holds it too.

pydantic describes `HttpUrl` as `{"format": "uri", ...}`, yet its validator also wants an
`http` or `https` scheme and a host; `PostgresDsn` adds its schemes; `IPvAnyAddress` is a
`format` no JSON Schema validator knows. A grammar built from those schemas lets a model write
`ab:` for a URL or any text for an address, which then fails validation after decoding. Here
each becomes a schema whose every string pydantic accepts: a URI `pattern` with the allowed
schemes and a plain host (DNS names whose last label starts with a letter, or IPv4 addresses,
and ports below 10,000), and IP addresses as `ipv4`/`ipv6`. The languages are
narrower than pydantic's (no IPv6 hosts, no internationalised names), never wider.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_LABEL = r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*"
# The last label starts with a letter: a host ending in a number is read as an IPv4 address.
_DNS = rf"(?:{_LABEL}\.)*[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*"
_USERINFO = r"(?:[A-Za-z0-9._~-]+(?::[A-Za-z0-9._~-]*)?@)?"
_AUTHORITY = rf"{_USERINFO}(?:{_DNS}|{_IPV4})(?::[0-9]{{1,4}})?"
_PCT = "%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|{_PCT})"
_QUERY = rf"(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|{_PCT})*"
_SCHEME = "[A-Za-z][A-Za-z0-9+.-]*"
_FIRST = rf"(?:[A-Za-z0-9._~!$&'()*+,;=@-]|{_PCT}){_PCHAR}*"  # an opaque path: no "/" or ":" first

_IP_FORMATS: dict[str, dict[str, Any]] = {
    "ipvanyaddress": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
    # Written as addresses (an interface or network of one address): a network with a prefix
    # length must have no host bits set, which no pattern sees.
    "ipvanyinterface": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
    "ipvanynetwork": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
}


def _url_pattern(allowed_schemes: list[str] | None) -> str:
    """URLs with these schemes (any, where None) and a host: the URI format's path, query and
    fragment after a plain authority (or `file://` and a path). One pattern, not a pattern
    beside the format, so a length bound is counted over its parts."""
    prefixes = []
    if "file" in (allowed_schemes or []):
        prefixes.append("file://")  # a file URL's host may be empty
    named = [s for s in allowed_schemes or [] if s != "file"]
    if named or not allowed_schemes:
        scheme = f"(?:{'|'.join(re.escape(s) for s in named)})" if named else _SCHEME
        prefixes.append(f"{scheme}://{_AUTHORITY}")
    if not allowed_schemes:  # any scheme: also one without an authority (`mailto:`, `urn:`)
        prefixes.append(f"{_SCHEME}:{_FIRST}")
    return f"^(?:{'|'.join(prefixes)})(?:/{_PCHAR}*)*(?:\\?{_QUERY})?(?:#{_QUERY})?$"


_DECIMAL = r"^[+-]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)$"
_UNSIGNED_DECIMAL = r"^\+?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)$"
DECIMAL_PATTERNS = (_DECIMAL, _UNSIGNED_DECIMAL)
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


class _Schema(GenerateJsonSchema):
    """pydantic's schema generator, with network types and decimals held as their validators
    hold them."""

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        found = super().decimal_schema(schema)
        branches = found.get("anyOf")
        if not (isinstance(branches, list) and len(branches) == 2 and branches[1] == {"type": "string"}):
            return found  # a serialization schema, or a form this does not know: as pydantic wrote it
        number = branches[0]
        bounds = {k: number[k] for k in _BOUNDS if k in number}
        if bounds and bounds != {"minimum": 0}:
            return {**number, **{k: v for k, v in found.items() if k != "anyOf"}}
        pattern = _UNSIGNED_DECIMAL if bounds else _DECIMAL
        return {**found, "anyOf": [number, {"type": "string", "pattern": pattern}]}

    def url_schema(self, schema: core_schema.UrlSchema) -> JsonSchemaValue:
        return self._with_host(super().url_schema(schema), schema)

    def multi_host_url_schema(self, schema: core_schema.MultiHostUrlSchema) -> JsonSchemaValue:
        # One host is a multi-host URL too.
        found = super().multi_host_url_schema(schema)
        found["format"] = "uri"
        return self._with_host(found, schema)

    @staticmethod
    def _with_host(found: JsonSchemaValue, schema: Any) -> JsonSchemaValue:
        found.pop("format", None)  # the pattern is a narrower URI
        found["pattern"] = _url_pattern(schema.get("allowed_schemes"))
        return found

    def generate(self, schema: Any, mode: Any = "validation") -> JsonSchemaValue:
        return _ip_formats(super().generate(schema, mode=mode))


def _ip_formats(node: Any) -> Any:
    """`node` with pydantic's IP formats replaced by the languages above."""
    if isinstance(node, list):
        return [_ip_formats(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _ip_formats(value) for key, value in node.items()}
    replacement = _IP_FORMATS.get(out.get("format")) if isinstance(out.get("format"), str) else None
    if replacement is not None:
        del out["format"]
        out.update(replacement)
    return out


def json_schema_of(tp: Any) -> dict[str, Any]:
    """pydantic's JSON Schema of a model class or any type, network types held (see above)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp.model_json_schema(schema_generator=_Schema)
    return TypeAdapter(tp).json_schema(schema_generator=_Schema)
