"""A typed final output (`extract(T, ...)`, `Agent(output_type=T)`): one schema, one lenient
grammar and one validator, derived from the type, as for tool arguments."""

from __future__ import annotations

import json
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Literal, TypeVar

import pydantic

import grammar
from grammar import CompileError, Grammar

from .._bounds import text_problem
from .._tools.constraints import Constraints, report
from .._errors import ModelRetry, OutputValidationError, ToolDefinitionError, Violation, pydantic_violations
from .._tools.schema import schema_for_type
from .._tools.types import UnsupportedType, prepare
from .._tools.validator import SchemaValidator
from .sketch import sketch

T = TypeVar("T")

OutputValidator = Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]
"""A function given a final answer, returning the answer to keep, or raising `ModelRetry`."""

JSON_FORM: dict[str, Any] | None = None
"""The form of the JSON every extraction's grammar holds a model to, as
`grammar.from_json_schema`'s keywords: None (the default) the form the model's chat template
shows it (`Runtime.json_separators`: `json.dumps`'s separators for a template that writes JSON,
as Qwen2.5's does; compact for one that writes none, as SmolLM2's), or for every model `{}`
compact, `{"separators": (", ", ": ")}`, `{"whitespace": N}` up to N free blanks between
tokens. Read when a type's grammar is built (once per type, form and process)."""

SCHEMA_PROMPT: Literal["sketch", "json-schema"] = "sketch"
"""How the instructions show a model the type it must write: `"sketch"`, the JSON it
describes with each value's kind in words (`agentkit._outputs.sketch`), or `"json-schema"`,
the JSON Schema document itself."""


async def apply_validator(validator: OutputValidator, value: Any) -> Any:
    """`validator(value)`, awaited where it is async."""
    result = validator(value)
    if inspect.isawaitable(result):
        result = await result
    return result


def correction(exc: OutputValidationError | ModelRetry) -> tuple[list[Violation], str, str]:
    """What an answer that failed validation (or that an output validator sent back) tells
    the model: the violations, the kind of retry they count as, and the message asking again."""
    if isinstance(exc, ModelRetry):
        violations = [Violation("", "output_validator", exc.message, "validator")]
        return violations, "model_retry", f"That answer is not accepted: {exc.message}\nAnswer again."
    told = "That answer is not valid:\n" + "\n".join(f"- {v}" for v in exc.violations) + "\nAnswer again."
    return list(exc.violations), "validation", told


class OutputSpec(Generic[T]):
    """Everything needed to constrain a generation to `T` and turn its text into a `T`."""

    def __init__(self, output_type: type[T] | Any):
        self.output_type = output_type
        self.label = label = getattr(output_type, "__name__", None) or repr(output_type)
        try:
            self._adapter: pydantic.TypeAdapter[T] = pydantic.TypeAdapter(prepare(output_type))
            self.schema = schema_for_type(prepare(output_type))
        except UnsupportedType as exc:
            raise ToolDefinitionError(f"output {label}", str(exc)) from None
        except (pydantic.PydanticUserError, pydantic.errors.PydanticSchemaGenerationError,
                pydantic.errors.PydanticInvalidForJsonSchema) as exc:
            raise ToolDefinitionError(f"output {label}", f"type has no JSON Schema: {exc}") from None
        self._forms: dict[str, Grammar] = {}
        self.grammar: Grammar = self.grammar_in(JSON_FORM or {})
        self._validator = SchemaValidator(self.schema)
        self.constraints: Constraints = report(self.schema, self.grammar, checked_formats=self._validator.formats)
        self._within: dict[tuple[str, int], Grammar] = {}

    def grammar_in(self, form: dict[str, Any]) -> Grammar:
        """The type's grammar with its JSON in `form` (see `JSON_FORM`), built once per form."""
        key = json.dumps(form, sort_keys=True)
        if key not in self._forms:
            try:
                self._forms[key] = grammar.from_json_schema(self.schema, lenient=True, **form)
            except CompileError as exc:
                raise ToolDefinitionError(f"output {self.label}", exc.reason, keyword=exc.keyword,
                                          pointer=exc.pointer) from None
        return self._forms[key]

    @staticmethod
    def form_for(runtime: Any) -> dict[str, Any]:
        """The form of the JSON `runtime`'s model is held to: `JSON_FORM` where set, else the
        separators its chat template shows (compact where it shows none)."""
        if JSON_FORM is not None:
            return JSON_FORM
        separators = getattr(runtime, "json_separators", None)
        return {"separators": tuple(separators)} if separators else {}

    def grammar_for(self, runtime: Any, max_tokens: int) -> Grammar:
        """The grammar to send `runtime`, in its model's form (`form_for`): where it cannot
        close a document at its token budget itself (a server: `steers_budget` False), held to
        sentences of at most `max_tokens` bytes, so the output always ends within as many
        tokens, blanks included. `grammar.LimitError` where not even the shortest output fits."""
        form = self.form_for(runtime)
        g = self.grammar_in(form)
        if getattr(runtime, "steers_budget", True):
            return g
        key = (json.dumps(form, sort_keys=True), max_tokens)
        if key not in self._within:
            self._within[key] = grammar.within_bytes(g, max_tokens)
        return self._within[key]

    def instructions(self) -> str:
        """The sentence that tells a model what to write."""
        schema = json.dumps(self.schema, ensure_ascii=False)
        if SCHEMA_PROMPT == "sketch":
            written = sketch(self.schema)
            if len(written) <= max(len(schema), 200):  # a type whose sketch repeats its parts: the schema
                return "Answer with one JSON value of this form, and nothing else:\n" + written
        return (
            "Answer with one JSON value that matches this JSON Schema, and nothing else:\n" + schema
        )

    def validate(self, text: str, *, validation_context: Any = None, **context: Any) -> T:
        """`text` as a `T`; `OutputValidationError` naming each failed field and keyword
        (`context` is passed to the error: `messages`, `usage`), or saying the text nests
        deeper than `MAX_NESTING` or holds a number too long to read (it is then not parsed).
        `validation_context` reaches the type's pydantic validators as `info.context`."""
        problem = text_problem(text)
        if problem is not None:  # parsing it would run out of stack, or Python refuses the number
            raise OutputValidationError([Violation("", "bounds", problem, "parse")], text, **context)
        try:
            value = json.loads(text)
        except ValueError as exc:  # not JSON, or an integer past Python's digit limit
            raise OutputValidationError([Violation("", "json", f"not JSON: {exc}", "parse")], text, **context) from None
        problems = self._validator.problems(value)
        if problems:
            violations = [
                Violation(p.path, p.keyword, p.message, self.constraints.enforced_by(p.pointer.rsplit("/", 1)[0], p.keyword))
                for p in problems
            ]
            raise OutputValidationError(violations, text, **context)
        try:
            return self._adapter.validate_json(text, context=validation_context)
        except pydantic.ValidationError as exc:
            raise OutputValidationError(pydantic_violations(exc), text, **context) from None
