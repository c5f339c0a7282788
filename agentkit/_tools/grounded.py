"""`Grounded`: a field's values held to the text they are read from.

`Annotated[str, Grounded()]` (a list's items, a number too) writes `"grounded": true` into the
field's JSON Schema, `Grounded(False)` writes `false`; `Field(json_schema_extra={"grounded":
...})` says the same. The schema stage only records the mark: an extraction reads it against
its `grounded=` mode (`_outputs.grounding`), and a grammar holds the field to its source only
where it is compiled with one, so a tool parameter marked so is an annotation until the agent
grounds it in the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GROUNDED_KEY = "grounded"  # the keyword `grammar.from_json_schema` reads with a `Grounding`


@dataclass(frozen=True)
class Grounded:
    """Mark a field's values as spans (strings) or numbers of the source text: `Annotated[str,
    Grounded()]`; `Grounded(False)` keeps a field free whatever the extraction's mode."""

    enabled: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise TypeError(f"Grounded(enabled) must be True or False, not {type(self.enabled).__name__}")

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        target = handler.resolve_ref_schema(schema) if "$ref" in schema else schema
        target[GROUNDED_KEY] = self.enabled
        return schema
