"""`@tool`: a function's signature becomes one typed arguments class (pydantic), and from it one
JSON Schema, one lenient grammar and one constraint report, so none of them can drift apart.

`Tool.from_json_schema` builds the same from a schema (OpenAI function JSON, MCP `tools/list`).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import re
import typing
from collections.abc import Callable
from typing import Any, overload

import pydantic
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

import grammar
from grammar import CompileError, Grammar, ToolSchema

from .._bounds import MAX_NESTING, text_problem, too_deep, value_depth
from .constraints import Constraints, report
from .._context import RunContext, is_context_type
from .docstrings import parse_docstring
from .._errors import ToolAborted, ToolArgumentsError, ToolDefinitionError, ToolTimeout, Violation, pydantic_violations
from .pydantic_schema import json_schema_of
from .schema import normalise, resolve_local, subschemas
from .types import UnsupportedType, prepare
from .validator import SchemaValidator

ToolFunction = Callable[..., Any]


class Tool:
    """A callable the model may call, with everything needed to constrain and check the call.

    `name`, `description`; `schema` (the arguments' JSON Schema); `args_type` (the generated
    pydantic class a call's arguments arrive as; None for schema-defined tools, whose arguments
    arrive as validated dicts); `grammar` (the arguments grammar, compiled leniently);
    `constraints` (per field: what the grammar enforces while decoding and what is checked
    after); `timeout` (seconds, or None for the agent's `tool_timeout`); `idempotent` (False:
    an equal call may give another result or act again, so every call runs, whatever the
    agent's `repeat_calls` says); `requires_approval` (True: a run that reaches a call of it
    stops before running it, and resumes with the caller's decision; see `Agent`); `retries`
    (how many corrections a run gives this tool's calls, arguments that do not validate or a
    `ModelRetry`; None for the agent's `max_retries`).

    `Tool(fn, name=..., strict=..., ...)` builds what `@tool` builds, from `fn`'s signature and
    docstring; given a `schema` (and the `args_type` its arguments arrive as, if any), it is
    built from those instead, as `Tool.from_json_schema` does.
    """

    def __init__(
        self,
        fn: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        schema: dict[str, Any] | None = None,
        args_type: type[BaseModel] | None = None,
        strict: bool = False,
        timeout: float | None = None,
        idempotent: bool = True,
        requires_approval: bool = False,
        retries: int | None = None,
        context_param: str | None = None,
        param_names: dict[str, str] | None = None,
        positional: tuple[str, ...] = (),
    ):
        if schema is None:  # `Tool(fn, ...)`: what `@tool` builds, from the signature and docstring
            if args_type is not None:
                raise ToolDefinitionError(repr(name), "args_type is given with its schema, or not at all")
            name = name or getattr(fn, "__name__", None) or type(fn).__name__
            doc = parse_docstring(inspect.getdoc(fn))
            args_type, context_param, param_names, positional = _arguments_class(name, fn, doc.params)
            schema = normalise(json_schema_of(args_type), close_objects=True)
            description = description if description is not None else doc.description
        elif name is None:
            name = getattr(fn, "__name__", None)
        description = description or ""
        if not isinstance(name, str) or not name.strip():
            raise ToolDefinitionError(repr(name), "a tool needs a non-empty name")
        if timeout is not None and timeout <= 0:
            raise ToolDefinitionError(name, f"timeout must be positive, got {timeout!r}")
        self.name = name
        self.description = description
        self.fn = fn
        self.schema = schema
        self.args_type = args_type
        self.strict = strict
        self.timeout = timeout
        self.idempotent = idempotent
        self.requires_approval = requires_approval
        if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
            raise ToolDefinitionError(name, f"retries must be an int of at least 0 or None, got {retries!r}")
        self.retries = retries
        self.context_param = context_param
        self.is_async = _is_async(fn)
        self._param_names = param_names or {}
        self._positional = positional
        self.grammar = _compile(name, schema)
        self._validator = SchemaValidator(schema)
        self.constraints: Constraints = report(schema, self.grammar, checked_formats=self._validator.formats)
        # Signature tools: pydantic checks every format it emits. Schema tools: the grammar is
        # consulted for what the validator cannot evaluate.
        self._needs_grammar_check = args_type is None and not _fully_checkable(schema, self._validator)
        self._refuse_unenforced()
        functools.update_wrapper(self, fn, updated=())

    # --- building ---------------------------------------------------------------------------

    @classmethod
    def from_function(
        cls,
        fn: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool = False,
        timeout: float | None = None,
        idempotent: bool = True,
        requires_approval: bool = False,
        retries: int | None = None,
    ) -> "Tool":
        """A tool from a function's signature, type hints and docstring (as `Tool(fn, ...)`)."""
        return cls(
            fn, name=name, description=description, strict=strict, timeout=timeout, idempotent=idempotent,
            requires_approval=requires_approval, retries=retries,
        )

    @classmethod
    def from_json_schema(
        cls,
        name: str,
        schema: dict[str, Any] | bool,
        fn: ToolFunction,
        *,
        description: str | None = None,
        strict: bool = False,
        timeout: float | None = None,
        idempotent: bool = True,
        requires_approval: bool = False,
        retries: int | None = None,
    ) -> "Tool":
        """A tool whose arguments are described by a JSON Schema; `fn(arguments)` receives them
        as a validated dict (plus a `RunContext` parameter, if it declares one).

        A schema the grammar cannot compile, or one with a keyword that neither the grammar
        enforces nor the validator can check, is refused with the keyword and place named.
        """
        if schema is True:
            schema = {"type": "object"}
        if not isinstance(schema, dict):
            raise ToolDefinitionError(name, f"the arguments schema must be a JSON object, not {schema!r}")
        return cls(
            name=name,
            description=description or "",
            fn=fn,
            schema=json.loads(json.dumps(schema)),
            args_type=None,
            strict=strict,
            timeout=timeout,
            idempotent=idempotent,
            requires_approval=requires_approval,
            retries=retries,
            context_param=_context_param_of(fn),
        )

    @classmethod
    def from_openai(cls, spec: dict[str, Any], fn: ToolFunction, **options: Any) -> "Tool":
        """A tool from OpenAI function-tool JSON (`{"type":"function","function":{...}}` or the
        inner `{"name", "description", "parameters"}`)."""
        function = spec.get("function", spec)
        return cls.from_json_schema(
            function["name"],
            function.get("parameters", {"type": "object"}),
            fn,
            description=function.get("description"),
            **options,
        )

    @classmethod
    def from_mcp(cls, entry: dict[str, Any], fn: ToolFunction, **options: Any) -> "Tool":
        """A tool from one entry of an MCP server's `tools/list` result."""
        return cls.from_json_schema(
            entry["name"],
            entry.get("inputSchema", {"type": "object"}),
            fn,
            description=entry.get("description"),
            **options,
        )

    def _refuse_unenforced(self) -> None:
        """Refuse what the grammar dropped when nothing would check it after decoding (or, with
        `strict`, anything the grammar dropped)."""
        for d in self.grammar.dropped:
            keyword = d.keyword
            subschema = _holder(self.schema, d.pointer, keyword)
            # The grammar drops a `$ref` only where it cannot resolve it (remote, or pointing
            # nowhere); the validator resolves no more, so every call would fail.
            unchecked = keyword == "$ref" or not self._validator.checks(keyword, subschema.get(keyword))
            if unchecked and self.args_type is None:
                raise ToolDefinitionError(
                    self.name,
                    f"the grammar cannot enforce it ({d.reason}) and agentkit cannot check it after decoding",
                    keyword=keyword,
                    pointer=d.pointer,
                )
            if self.strict:
                raise ToolDefinitionError(
                    self.name,
                    f"strict=True, but the grammar cannot enforce this constraint while decoding "
                    f"({d.reason}); it would only be checked afterwards",
                    keyword=keyword,
                    pointer=d.pointer,
                )

    # --- describing -------------------------------------------------------------------------

    def tool_schema(self) -> ToolSchema:
        """The grammar package's view of this tool (name, schema, description)."""
        return ToolSchema(self.name, self.schema, self.description or None)

    def to_openai(self) -> dict[str, Any]:
        """OpenAI function-tool JSON: `{"type": "function", "function": {name, description,
        parameters}}`."""
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = self.schema
        return {"type": "function", "function": function}

    # --- validating and calling ---------------------------------------------------------------

    def validate(self, arguments: dict[str, Any] | str, *, validation_context: Any = None) -> Any:
        """`arguments` (a dict, or JSON text) as this tool's typed arguments: an `args_type`
        instance, or for schema tools the validated dict. Raises `ToolArgumentsError`, whose
        violations name each field, keyword, and whether the grammar or the validator holds it
        (arguments nested deeper than `MAX_NESTING`, or a text with a number too long to
        read, are refused unread). `validation_context` reaches the arguments' pydantic
        validators as `info.context` (a run's `validation_context`).
        """
        text = arguments if isinstance(arguments, str) else None
        if isinstance(arguments, str):
            problem = text_problem(arguments)
        else:
            depth = value_depth(arguments)
            problem = too_deep(depth) if depth > MAX_NESTING else None
        if problem is not None:  # parsing or validating it would run out of stack
            raise ToolArgumentsError(self.name, [Violation("", "bounds", problem, "parse")], text)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError as exc:  # not JSON, or an integer past Python's digit limit
                raise ToolArgumentsError(
                    self.name, [Violation("", "json", f"not JSON: {exc}", "parse")], text
                ) from None
        if not isinstance(arguments, dict):
            shape = Violation("", "type", f"arguments must be an object, got {type(arguments).__name__}", "grammar")
            raise ToolArgumentsError(self.name, [shape], text)
        violations = self._schema_violations(arguments)
        if violations:
            raise ToolArgumentsError(self.name, violations, text)
        if self.args_type is None:
            return arguments
        try:
            return self.args_type.model_validate_json(json.dumps(arguments, ensure_ascii=False),
                                                      context=validation_context)
        except pydantic.ValidationError as exc:
            raise ToolArgumentsError(self.name, pydantic_violations(exc, self._param_names), text) from None

    def _schema_violations(self, arguments: dict[str, Any]) -> list[Violation]:
        problems = self._validator.problems(arguments)
        out = [
            Violation(p.path, p.keyword, p.message, self._placement(p)) for p in problems
        ]
        if not out and self._needs_grammar_check:
            compact = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
            if not self.grammar.accepts(compact):
                out.append(Violation("", "grammar", "does not match the arguments grammar", "grammar"))
        return out

    def _placement(self, problem: Any) -> str:
        where = self.constraints.enforced_by(problem.pointer.rsplit("/", 1)[0], problem.keyword)
        if where == "grammar" and any(self._placement(c) == "validator" for c in problem.causes):
            return "validator"
        return where

    async def call(self, arguments: Any, context: RunContext[Any] | None = None, *, timeout: float | None = None) -> Any:
        """Run the tool on validated arguments (as `validate` returns them): async functions
        awaited, sync ones in a worker thread; `ToolTimeout` past the timeout (the tool's own,
        else `timeout`), also for an async tool that blocked the event loop and so returned
        only after its deadline. What the tool raises that is not an `Exception`
        (`SystemExit`, `GeneratorExit`) is a `ToolAborted`; `KeyboardInterrupt` and
        cancellation pass through."""
        limit = self.timeout if self.timeout is not None else timeout
        args, kwargs = self._call_arguments(arguments, context)
        work = self._guarded(args, kwargs)
        if limit is None:
            return await work
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        try:
            result = await asyncio.wait_for(work, limit)
        except asyncio.TimeoutError:
            raise ToolTimeout(self.name, limit) from None
        if loop.time() > deadline:  # it held the loop past its deadline, so no timer could fire
            raise ToolTimeout(self.name, limit)
        return result

    async def _guarded(self, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """The tool's own run, with what asyncio would not contain turned into `ToolAborted`:
        a `SystemExit` out of a task ends the event loop, and other `BaseException`s pass
        every `except Exception`."""
        try:
            if self.is_async:
                return await self.fn(*args, **kwargs)
            return await asyncio.to_thread(self.fn, *args, **kwargs)
        except (Exception, KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:
            raise ToolAborted(self.name, exc) from exc

    def _call_arguments(self, arguments: Any, context: RunContext[Any] | None) -> tuple[list[Any], dict[str, Any]]:
        if context is None:
            context = RunContext(deps=None, tool_name=self.name)
        if self.args_type is None:
            kwargs = {self.context_param: context} if self.context_param else {}
            return [arguments], kwargs
        values = {self._param_names.get(f, f): getattr(arguments, f) for f in type(arguments).model_fields}
        if self.context_param:
            values[self.context_param] = context
        args = [values.pop(p) for p in self._positional]
        return args, values

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, bypassing validation."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"


@overload
def tool(fn: ToolFunction, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool = False,
    timeout: float | None = None,
    idempotent: bool = True,
    requires_approval: bool = False,
    retries: int | None = None,
) -> Callable[[ToolFunction], Tool]: ...


def tool(
    fn: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool = False,
    timeout: float | None = None,
    idempotent: bool = True,
    requires_approval: bool = False,
    retries: int | None = None,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Make a function (sync or async) a `Tool`: `@tool` or `@tool(name=..., strict=True)`.

    Every parameter needs a type annotation with a JSON Schema; a parameter annotated
    `RunContext` is injected by the agent instead. Descriptions come from the docstring (Google,
    NumPy or Sphinx style). `strict=True` refuses a tool with any constraint the grammar
    cannot enforce while decoding. `timeout` bounds each call, in seconds. `idempotent=False`
    marks a tool whose equal calls may differ (side effects, changing data): each call then
    runs, and is never answered from an earlier one (see `Agent`'s `repeat_calls`).
    `requires_approval=True`: a run stops before running a call of it, and its result lists the
    call in `pending`, until `agent.run(message_history=..., approvals=...)` resumes it.
    `retries`: the corrections a run gives this tool's calls (None: the agent's `max_retries`).
    """

    def wrap(f: ToolFunction) -> Tool:
        return Tool.from_function(
            f, name=name, description=description, strict=strict, timeout=timeout, idempotent=idempotent,
            requires_approval=requires_approval, retries=retries,
        )

    return wrap(fn) if fn is not None else wrap


# --- the arguments class ------------------------------------------------------------------------


def _arguments_class(
    tool_name: str, fn: ToolFunction, docs: dict[str, str]
) -> tuple[type[BaseModel], str | None, dict[str, str], tuple[str, ...]]:
    """The generated pydantic class of `fn`'s arguments, the context parameter's name, the map
    from class field names back to parameter names, and the positional-only parameters."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(tool_name, f"has no inspectable signature: {exc}") from None
    hints = _type_hints(tool_name, fn, signature)
    fields: dict[str, Any] = {}
    names: dict[str, str] = {}
    positional: list[str] = []
    context_param = None
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(tool_name, "*args and **kwargs cannot be described by a schema", parameter=param.name)
        annotation = hints.get(param.name, param.annotation)
        if annotation is inspect.Parameter.empty:
            raise ToolDefinitionError(tool_name, "has no type annotation", parameter=param.name)
        if is_context_type(annotation):
            if context_param is not None:
                raise ToolDefinitionError(tool_name, "only one parameter may take the RunContext", parameter=param.name)
            context_param = param.name
            if param.kind is param.POSITIONAL_ONLY:
                raise ToolDefinitionError(tool_name, "the RunContext parameter must be passable by name", parameter=param.name)
            continue
        if param.kind is param.POSITIONAL_ONLY:
            positional.append(param.name)
        try:
            prepared = prepare(annotation)
            json_schema_of(prepared)
        except UnsupportedType as exc:
            raise ToolDefinitionError(tool_name, str(exc), parameter=param.name) from None
        except (pydantic.PydanticUserError, pydantic.errors.PydanticSchemaGenerationError,
                pydantic.errors.PydanticInvalidForJsonSchema, TypeError) as exc:
            raise ToolDefinitionError(
                tool_name, f"type {_type_name(annotation)} has no JSON Schema: {_first_line(exc)}", parameter=param.name
            ) from None
        field_name = _field_name(param.name)
        names[field_name] = param.name
        fields[field_name] = (prepared, _field_info(param, annotation, docs.get(param.name), field_name))
    class_name = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", tool_name) if part) + "Args"
    try:
        args_type = create_model(
            class_name if class_name[:1].isalpha() else "ToolArgs",
            __config__=ConfigDict(extra="forbid", populate_by_name=True),
            __module__=getattr(fn, "__module__", None) or __name__,
            **fields,
        )
        json_schema_of(args_type)
    except Exception as exc:  # pydantic reports a bad default or field in several error types
        raise ToolDefinitionError(tool_name, f"arguments have no JSON Schema: {_first_line(exc)}") from None
    return args_type, context_param, names, tuple(positional)


def _type_hints(tool_name: str, fn: ToolFunction, signature: inspect.Signature) -> dict[str, Any]:
    """`fn`'s resolved annotations; an unresolvable one is an error naming its parameter."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # an unresolvable forward reference, of any kind: find which one
        pass
    namespace = getattr(inspect.unwrap(fn), "__globals__", {})
    hints = {}
    for param in signature.parameters.values():
        annotation = param.annotation
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(namespace))  # how typing resolves string annotations
            except Exception as exc:
                raise ToolDefinitionError(
                    tool_name, f"annotation {param.annotation!r} cannot be resolved: {exc}", parameter=param.name
                ) from None
        hints[param.name] = annotation
    return hints


def _field_name(param: str) -> str:
    """A pydantic-safe field name for a parameter (leading underscores and BaseModel attribute
    names are renamed; the schema keeps the parameter's name through an alias)."""
    if param.startswith("_") or hasattr(BaseModel, param):
        return f"arg_{param.lstrip('_')}_"
    return param


def _field_info(param: inspect.Parameter, annotation: Any, doc: str | None, field_name: str) -> FieldInfo:
    options: dict[str, Any] = {}
    if doc and not _annotated_description(annotation):
        options["description"] = doc
    if field_name != param.name:
        options["alias"] = param.name
    default = param.default
    if isinstance(default, FieldInfo):
        return pydantic.fields.FieldInfo.merge_field_infos(default, **options)
    if default is inspect.Parameter.empty:
        return Field(**options)
    return Field(default, **options)


def _annotated_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__)


def _context_param_of(fn: ToolFunction) -> str | None:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # a function without resolvable hints takes no context
        return None
    return next((name for name, hint in hints.items() if name != "return" and is_context_type(hint)), None)


def _is_async(fn: ToolFunction) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


# --- schema-side helpers ------------------------------------------------------------------------


def _compile(name: str, schema: dict[str, Any]) -> Grammar:
    try:
        return grammar.arguments(schema, lenient=True)
    except CompileError as exc:
        raise ToolDefinitionError(name, exc.reason, keyword=exc.keyword, pointer=exc.pointer) from None


def _holder(schema: dict[str, Any], pointer: str, keyword: str) -> dict[str, Any]:
    """The subschema holding `keyword`, for a pointer that names it or the keyword itself."""
    for candidate in (pointer, pointer.rsplit("/", 1)[0]):
        try:
            node = resolve_local(schema, "#" + candidate)
        except (KeyError, IndexError, ValueError, TypeError):
            continue
        if isinstance(node, dict) and keyword in node:
            return node
    return {}


def _fully_checkable(schema: Any, validator: SchemaValidator) -> bool:
    """Whether `validator` evaluates every keyword and format in `schema`, so the grammar need
    not be consulted to validate decoded arguments."""
    if not isinstance(schema, dict):
        return True
    if not all(validator.checks(key, value) for key, value in schema.items()):
        return False
    return all(_fully_checkable(sub, validator) for _, sub in subschemas(schema))
