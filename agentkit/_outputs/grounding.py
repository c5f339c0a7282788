"""Which of an extraction's values are held to its text (`extract(T, text, grounded=...)`), the
grammar that holds them, and the record of what was held (`Extraction.grounding`).

A held string is a span of the text, a held number one the text writes (`grammar.Grounding`).
`grounded=True` holds every plain string (a list's items too) and number; `"auto"` those the
rule below picks from what the schema says of the field and what the text holds; `False` none.
A field's own mark (`Annotated[str, Grounded()]`, `Grounded(False)`, `Field(json_schema_extra=
{"grounded": ...})`) overrides the mode. Enums, consts and booleans are never held. The grammar
is built per text, in process only: a server is sent the type's own grammar. The agent marks
its tools' arguments by the same rule (`marked_schema`), the conversation the text.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import grammar
from grammar import CompileError, Grammar

from .._errors import InvalidArgument
from .._tools.grounded import GROUNDED_KEY
from .._tools.schema import escape, unescape

from .currencies import CODES, written_currencies
from .labels import candidates, labelled_values
from .output import OutputSpec

NULL_ONLY = {"type": "null"}
NUMBERS_AS_STRINGS = "numbers"  # `"grounded": "numbers"`: a string held to the numbers the text writes

GroundedMode = bool | Literal["auto"]

# Formats whose values a text writes in other words that grounding does not read back (a
# date and a time it does: "March 14th" is offered as 2025-03-14): "auto" leaves them free.
_REWORDED_FORMATS = frozenset({"date-time", "duration"})
# Names and descriptions of fields whose values are written by the model rather than copied. (A
# summary or title is left held: on the tune half a ticket's subject line and a meeting's title
# stand in the text, and holding them was right more often than not.)
_COMPOSED = re.compile(r"descri|reason|explan|comment|note|sentiment|answer", re.IGNORECASE)
_NUMBER = re.compile(r"\d")
_WORD = re.compile(r"\w+")
# What a field's name says its held spans look like, under "auto" and where the field sets no
# pattern or format of its own: a place or a person holds no digit (beside an address's postal
# code and street number, a small model otherwise takes "10115 Berlin" for the city or
# "Keizersgracht 123" for the recipient); an email address holds an "@" and a phone number is
# digits (a small model otherwise takes "my account" or a phone number for an email). Each with
# what tells whether a text writes a value of that shape (None: any text may hold one). A shape
# is held only where the text writes such a value: where no span could fit, the field's fallback
# would be any string of that shape, which a small model writes until its budget ends.
_EMAIL_LIKE = re.compile(r"[^@\s]+@[^@\s]+\.\w")
_PHONE_LIKE = re.compile(r"(?<!\w)[+(]?\d[\d ().-]{4,}\d(?!\w)")
_DATE_LIKE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}")


def _writes_a_phone_number(text: str) -> bool:
    """Whether `text` writes a phone number: seven digits or more, with blanks, dots, dashes or
    brackets between them, that are not a date."""
    return any(sum(c.isdigit() for c in m.group()) >= 7 and not _DATE_LIKE.fullmatch(m.group())
               for m in _PHONE_LIKE.finditer(text))


# A street is written with its house number, where the text writes a number at all: held to
# the text, Qwen2.5-Coder-0.5B left it out in 2 of the tune half's 10 addresses ("Grand Canal
# Square" for "3 Grand Canal Square").
_STREET = re.compile(r"(\w+_)?(street|street_address|address_line_?\d?|road)", re.IGNORECASE)

_NAMED_SHAPES = (
    (re.compile(r"(city|town|country|region|province|county|recipient|surname"
                r"|(first|last|given|family|middle|full)_?name)", re.IGNORECASE), "^[^0-9]*$", None),
    (re.compile(r"(\w+_)?e_?mail(_address)?", re.IGNORECASE), "^[^@\\s]+@[^@\\s]+$",
     lambda text: _EMAIL_LIKE.search(text) is not None),
    (re.compile(r"(\w+_)?(phone|telephone|tel|mobile|cell|fax)(_?number)?", re.IGNORECASE),
     "^[+(]?[0-9][0-9 ().-]{4,}[0-9]$", _writes_a_phone_number),
)


@dataclass(frozen=True)
class FieldGrounding:
    """Whether an extraction held one field's values to its text: `path` the values' JSON
    pointer (`/tags/*` for every item of a list), `kind` "string", "number" or "enum" (currency
    codes narrowed to those the text writes), and where a field was not held though asked,
    `reason`."""

    path: str
    kind: str
    grounded: bool
    reason: str = ""


def check_mode(value: Any, argument: str = "grounded") -> None:
    """Refuse a grounding mode (`grounded=`, `grounded_arguments=`, `grounded_answers=`) that
    is not True, False or "auto": an `InvalidArgument` naming `argument`."""
    if not (isinstance(value, bool) or (isinstance(value, str) and value == "auto")):
        raise InvalidArgument(argument, f'must be True, False or "auto", not {value!r}')


def grounded_grammar(spec: OutputSpec[Any], text: str, mode: GroundedMode, runtime: Any,
                     bounds: dict[str, int] | None = None,
                     refused: dict[str, list[dict[str, Any]]] | None = None,
                     filled: set[str] | None = None,
                     ) -> tuple[Grammar | None, tuple[FieldGrounding, ...]]:
    """The grammar holding `spec`'s chosen fields to `text` (None: the type's own, as no field
    is held), and what was held. `bounds`: top-level held lists given at most so many items
    (`repeated_items`); `refused`: schemas top-level held fields' values must not match
    (`kept_from`, `numbers_inside`), each field's only where the text still holds another
    value for it; `filled`: top-level held lists given one item at least (`empty_lists`)."""
    g, record = _grounded_grammar(spec, text, mode, runtime, bounds, refused, filled)
    lost = {key for key, schemas in (refused or {}).items()
            if schemas != [NULL_ONLY] and any(r.path == "/" + escape(key) and not r.grounded for r in record)}
    if lost and refused is not None:  # no other value the text holds fits: that field as first read
        g, record = _grounded_grammar(spec, text, mode, runtime, bounds,
                                      {k: v for k, v in refused.items() if k not in lost}, filled)
    return g, record


def _grounded_grammar(spec: OutputSpec[Any], text: str, mode: GroundedMode, runtime: Any,
                      bounds: dict[str, int] | None, refused: dict[str, list[dict[str, Any]]] | None,
                      filled: set[str] | None) -> tuple[Grammar | None, tuple[FieldGrounding, ...]]:
    marked, chosen = marked_schema(spec.schema, text, mode)
    properties = marked.get("properties") or {}
    for key in filled or ():
        node = properties.get(key)
        if isinstance(node, dict) and isinstance(node.get("items"), dict) and node.get("maxItems", 1) >= 1:
            node["minItems"] = max(1, node.get("minItems", 0))
    for key, bound in (bounds or {}).items():
        node = properties.get(key)
        if isinstance(node, dict) and isinstance(node.get("items"), dict):
            least = node.get("minItems", 0) if isinstance(node.get("minItems"), int) else 0
            node["maxItems"] = max(least, min(bound, node.get("maxItems", bound)))
    for key, schemas in (refused or {}).items():
        node = properties.get(key)
        if schemas == [NULL_ONLY] and key in properties:
            properties[key] = dict(NULL_ONLY)
        elif isinstance(node, dict):
            node["allOf"] = [*(node.get("allOf") or ()), *schemas]
    if not chosen:
        return None, ()
    if not getattr(runtime, "steers_budget", True):
        why = "the runtime decodes on a server, which is sent the type's own grammar"
        return None, tuple(FieldGrounding(path, kind, False, why) for path, kind in chosen.values())
    try:
        g = grammar.from_json_schema(marked, lenient=True, grounding=grammar.Grounding(text),
                                     **spec.form_for(runtime))
    except CompileError as exc:  # never expected: the plain grammar compiled; the type's own then
        why = f"the grounded grammar did not compile: {exc}"
        return None, tuple(FieldGrounding(path, kind, False, why) for path, kind in chosen.values())
    return g, _record(chosen, g.grounding)


def repeated_items(document: str, grounding: tuple[FieldGrounding, ...]) -> dict[str, int]:
    """Each top-level list of held strings in `document` (an extraction's JSON) that repeats
    an item, with how many items it had before the first repeat. A small model held to the
    text's spans repeats one item until the list's bound (`['outdoor', 'rainwear', 'outdoor',
    'outdoor', ...]`): read again with the list bounded to its distinct items, the same greedy
    choices give the list up to the repeat and then close it."""
    value = _object(document)
    bounds = {}
    for key in held_lists(grounding):
        items = value.get(key)
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            continue
        seen: set[str] = set()
        for i, item in enumerate(items):
            norm = _folded(item)
            if norm in seen:
                bounds[key] = i
                break
            seen.add(norm)
    return bounds


def empty_lists(document: str, grounding: tuple[FieldGrounding, ...], required: set[str]) -> set[str]:
    """The required top-level lists of held strings that `document` (an extraction's JSON) left
    empty: a small model held to the text closes a list at once (SmolLM2-135M a meeting's
    attendees in 6 of the tune half's 10 "with Alice, Bob and Chiara"); read again with one item
    at least, it writes them."""
    value = _object(document)
    return {key for key in held_lists(grounding) if key in required and value.get(key) == []}


SharedValue = tuple[tuple[str, ...], list[Any]]
"""Top-level fields that took one value, in the document's order, and the value's spellings."""


def repeated_values(document: str, grounding: tuple[FieldGrounding, ...]) -> list[SharedValue]:
    """The top-level held strings and numbers of `document` (an extraction's JSON) that two or
    more fields took, each with the fields that took it. A small model held to the text takes
    one value for several fields (an order's quantity again as its unit price, a city again as
    the country, the customer again as the item: a third of the tune half's orders and
    addresses on SmolLM2-135M). Which field the value belongs to, `keep_from` decides."""
    held = top_level_held(grounding)
    groups: dict[tuple[str, Any], tuple[list[str], list[Any]]] = {}
    for key, item in _object(document).items():
        if key not in held or isinstance(item, bool) or not isinstance(item, (str, int, float)):
            continue
        number = _as_number(item)
        norm = ("number", number) if number is not None else ("string", _folded(str(item)))
        spellings = [item] if number is None else [number, str(item)]
        keys, seen = groups.setdefault(norm, ([], []))
        keys.append(key)
        seen.extend(v for v in spellings if v not in seen)
    return [(tuple(keys), spellings) for keys, spellings in groups.values() if len(keys) > 1]


def cut_values(document: str, grounding: tuple[FieldGrounding, ...], text: str,
               required: set[str]) -> list[SharedValue]:
    """Top-level held texts of `document` where one field took a piece of another's value: an
    optional field's value inside a required field's (recipient "Queen Street West", street
    "200 Queen Street West"), or written right before or after it in `text` (recipient
    "Bahnhofstrasse", street "21" for "Bahnhofstrasse 21"); or any field's value cut from the
    start of one of the shape its field's name says (company "fatou.diop@senelec." beside that
    email address; a company in its domain, "PolMarket", is no such piece).
    Each pair as a shared value (`keep_from` leaves it to the required or named field) with
    what the other must not take again: the whole value, and the piece. A required field inside
    another required one is left alone: a product's brand stands in its name."""
    held = top_level_held(grounding)
    texts = {k: v for k, v in _object(document).items()
             if held.get(k) == "string" and isinstance(v, str) and v.strip()}
    cut: list[SharedValue] = []
    for piece_key, piece in texts.items():
        for whole_key, whole in texts.items():
            if piece_key == whole_key or _folded(piece) == _folded(whole):
                continue
            if _named_for(piece_key, piece):  # an email address in its own field, not the piece
                continue
            if _named_for(whole_key, whole):
                if _folded(whole).startswith(_folded(piece)):
                    cut.append(((piece_key, whole_key), [whole, piece]))
            elif piece_key not in required and whole_key in required:
                if _folded(piece) in _folded(whole):
                    cut.append(((piece_key, whole_key), [whole, piece]))
                elif (joined := _written_together(text, piece, whole)) is not None:
                    cut.append(((piece_key, whole_key), [joined, piece]))
    return cut


def nullable_fields(schema: dict[str, Any]) -> set[str]:
    """The top-level properties of `schema` that admit null (`str | None`): those an extraction
    may read again as null (`NULL_ONLY`)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return set()
    return {key for key, node in properties.items() if isinstance(node, dict) and _admits_null(node)}


def _admits_null(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(branch, dict) and _admits_null(branch) for branch in node.get("anyOf") or node.get("oneOf") or ())


def _written_together(text: str, first: str, second: str) -> str | None:
    """Where `text` writes `first` and `second` one right after the other, blanks apart (in
    either order), that run of the text."""
    for a, b in ((first, second), (second, first)):
        found = re.search(re.escape(a) + r"\s+" + re.escape(b), text)
        if found is not None:
            return found.group()
    return None


def keep_from(shared: list[SharedValue], sure: dict[str, float], required: set[str]) -> dict[str, list[Any]]:
    """The fields to keep from a value they shared with another (`repeated_values`), by field
    with the values (`kept_from` gives the schemas that refuse them): every field of a group but
    the one the value is left to. A text is left to a field whose
    name says the value's shape (an email address to `email`, not to `name`), else to the first
    required field that took it (else the first): a small model copies the span it has just
    written into the next field (the customer again as the item), or puts a required field's
    value into an optional one before it (an address's city as its recipient). A number is
    left to the field the model was surest of (`sure`: each field's value's probability; the
    first where the scores are missing). Set on the tune half of `bench.values` with
    SmolLM2-135M: of its 20 pairs where one field was right, leaving every value to the first
    field would have kept the right one in 14, to the surer one in 14 (a copied span is often
    the surer); see docs/extraction.md."""
    kept: dict[str, list[Any]] = {}
    for keys, values in shared:
        if isinstance(values[0], str):
            keeper = next((k for k in keys if _named_for(k, values[0])), None) \
                or next((k for k in keys if k in required), keys[0])
        else:
            keeper = max(keys, key=lambda k: (sure.get(k, 0.0), -keys.index(k)))
        for key in keys:
            if key != keeper:
                kept[key] = list(dict.fromkeys([*kept.get(key, []), *values]))
    return kept


def numbers_inside(document: str, grounding: tuple[FieldGrounding, ...]) -> dict[str, list[dict[str, Any]]]:
    """Each top-level held string of `document` that holds, as a number of its own, the value a
    held number field took, with the schemas that refuse it: a small model takes an order's
    item with its count ("120 cotton towels" beside a quantity of 120, or in words: "dozen solar
    lanterns" beside 12), or the customer up to it ("Hotel Sacher Wien reordered 250 linen
    napkins")."""
    value, top = _object(document), top_level_held(grounding)
    taken = {str(v) for k, v in value.items() if top.get(k) == "number" and isinstance(v, (int, float, str))
             and not isinstance(v, bool) and _as_number(v) is not None}
    found: dict[str, list[dict[str, Any]]] = {}
    for key, item in value.items():
        if top.get(key) != "string" or not isinstance(item, str) or _as_number(item) is not None:
            continue
        inside = [n for n in sorted(taken) if re.search(rf"(?<![\d.,]){re.escape(n)}(?![\d]|[.,]\d)", item)]
        schemas = [{"not": {"pattern": "(^|[^0-9.,])" + _regex_literal(n) + "($|[^0-9.,]|[.,]$|[.,][^0-9])"}}
                   for n in inside]
        schemas += [_without_word(w) for w in _number_words(item, taken)]
        if schemas:
            found[key] = schemas
    return found


def _number_words(item: str, taken: set[str]) -> list[str]:
    """The words of `item` that write one of the numbers `taken` in words ("dozen" for 12,
    "twelve"), alone or as a run of at most three words; none with a digit (those are read
    as digits)."""
    wanted = {n for n in (_as_number(t) for t in taken) if n is not None}
    words = [w.strip(",.;:") for w in item.split()]
    found: list[str] = []
    if not wanted:
        return found
    for size in (1, 2, 3):
        for start in range(len(words) - size + 1):
            run = words[start:start + size]
            if any(_NUMBER.search(w) for w in run) or any(w in found for w in run):
                continue
            if wanted & {float(n) for n in grammar.Grounding(" ".join(run)).numbers}:
                found.extend(w for w in run if w and w not in found)
    return found


def _without_word(word: str) -> dict[str, Any]:
    """A schema refusing a text that holds `word` as a word of its own."""
    return {"not": {"pattern": "(^|[^\\w])" + _regex_literal(word) + "($|[^\\w])"}}


_ISO_DATE_OR_TIME = re.compile(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}(?::\d{2})?")
_MOST_DATE_WORDS = 6  # "the 22nd of August 2025 at": the longest run a date or time is read from
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december")
_MONTH_WORD = re.compile(f"({'|'.join(name[:3] for name in _MONTH_NAMES)})[a-z]*\\.?", re.IGNORECASE)
_LEFT_HANGING = {"not": {"pattern": "(\\s(on|at|of|the|for|in|from|by)|:)$"}}


def dates_inside(document: str, grounding: tuple[FieldGrounding, ...]) -> dict[str, list[dict[str, Any]]]:
    """Each top-level held text of `document` that writes, in words, a date or time another held
    field took, with the schemas that refuse each word of them that dates (and a value left
    hanging on "on", "at" or a colon once they are gone): a small model takes a meeting's title
    with its date ("Security Training on December 9th" beside 2025-12-09) or as the date alone
    ("June 3rd"), or the sentence that gives its date and time ("On the 1st of July 2025 at
    10:45"); and each held list with an item that is the taken date's month, with the schema
    that refuses it ("May" among a meeting's attendees for "the 5th of May")."""
    value, top = _object(document), top_level_held(grounding)
    texts = {k: v for k, v in value.items() if top.get(k) == "string" and isinstance(v, str)}
    taken = {v for v in texts.values() if _ISO_DATE_OR_TIME.fullmatch(v)}
    years = sorted({v[:4] for v in taken if "-" in v})  # a date written without its year takes the field's
    found: dict[str, list[dict[str, Any]]] = {}
    if not taken:
        return found
    for key, item in texts.items():
        if item in taken:
            continue
        words, pieces = item.split(), []
        for size in range(1, min(len(words), _MOST_DATE_WORDS) + 1):  # the shortest runs first
            for start in range(len(words) - size + 1):
                run = " ".join(words[start:start + size]).strip(",.;:")
                if run and not any(p in run for p in pieces) and \
                        taken & set(grammar.Grounding(" ".join([run, *years])).spelled):
                    pieces.append(run)
        if pieces:  # each word of them that dates: "December" stays out once "December 9th" is refused
            dating = dict.fromkeys(w.strip(",.;:") for p in pieces for w in p.split()
                                   if _NUMBER.search(w) or _MONTH_WORD.fullmatch(w.strip(",.;:")))
            found[key] = [_without_word(w) for w in dating] + [_LEFT_HANGING]
    months = {spelled for month in {_MONTH_NAMES[int(v[5:7]) - 1] for v in taken if "-" in v}
              for spelled in (month, month[:3])}
    for key in held_lists(grounding):  # an item that is the taken date's month: "May" of "the 5th of May"
        items = value.get(key)
        named = [i for i in items if isinstance(i, str) and i.strip(",.;:").casefold() in months] \
            if isinstance(items, list) else []
        if named:
            found[key] = [{"items": _without_word(i.strip(",.;:"))} for i in dict.fromkeys(named)]
    return found


def held_lists(grounding: tuple[FieldGrounding, ...]) -> set[str]:
    """The top-level lists whose items an extraction held to its text as strings, by name."""
    return {unescape(g.path[1:-2]) for g in grounding
            if g.grounded and g.kind == "string" and g.path.endswith("/*") and g.path.count("/") == 2}


def top_level_held(grounding: tuple[FieldGrounding, ...]) -> dict[str, str]:
    """The top-level fields an extraction held to its text as strings or numbers, by name, with
    their kind."""
    return {unescape(g.path[1:]): g.kind for g in grounding
            if g.grounded and g.kind in ("string", "number") and g.path.count("/") == 1}


def _object(document: str) -> dict[str, Any]:
    """An extraction's JSON as an object; empty where it is none (not JSON, or another value)."""
    try:
        value = json.loads(document)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _folded(text: str) -> str:
    """A text compared with case and runs of blanks folded."""
    return " ".join(text.split()).casefold()


def _named_for(key: str, value: str) -> bool:
    """Whether field `key`'s name says a shape a text is searched for (an email address, a
    phone number: `_NAMED_SHAPES`) and `value` has it."""
    return any(written is not None and named.fullmatch(key) and re.search(shape, value)
               for named, shape, written in _NAMED_SHAPES)


def kept_from(values: list[Any]) -> list[dict[str, Any]]:
    """Schemas a field's value must not match, for each repeated value: a number (or a number
    written as a string) not equal to it; a text neither holding it nor one of its runs of
    words (kept from "Lars Eriksen", a small model took "Lars Eriksen: lars@omegatools.no", or
    "Lars": the other field's value still). Of a text longer than `_MOST_WORDS` words, only
    the text and what holds it are refused."""
    numbers = [v for v in values if not isinstance(v, str) or _as_number(v) is not None]
    texts = [v for v in values if isinstance(v, str) and _as_number(v) is None]
    runs = [" ".join(words[i:j]) for v in texts for words in [v.split()] if len(words) <= _MOST_WORDS
            for i in range(len(words)) for j in range(i + 1, len(words) + 1)]
    schemas = [{"not": {"enum": numbers}}] if numbers else []
    schemas += [{"not": {"enum": list(dict.fromkeys(runs))}}] if runs else []
    return schemas + [{"not": {"pattern": _regex_literal(v)}} for v in texts]


_MOST_WORDS = 12  # a value's runs of words grow with its square: a long one is kept from whole
_REGEX_MARK = re.compile(r"[\\^$.|?*+()\[\]{}/-]")


def _regex_literal(text: str) -> str:
    """`text` as a JSON Schema pattern that matches it literally."""
    return _REGEX_MARK.sub(r"\\\g<0>", text)


def _as_number(item: str | int | float) -> float | None:
    """A held number, or a held number written as a string (a `Decimal` field's "3.75")."""
    if isinstance(item, (int, float)):
        return float(item)
    try:
        return float(item) if _NUMBER.search(item) and item.strip() == item else None
    except ValueError:
        return None


def marked_schema(schema: dict[str, Any], text: str, mode: GroundedMode, *, numbers_if_written: bool = True,
                  optional_held: bool = True,
                  text_known: bool = True) -> tuple[dict[str, Any], dict[str, tuple[str, str]]]:
    """A copy of `schema` with `"grounded": true` on each value held, and those values by
    schema pointer: (their JSON pointer, their kind).

    The one rule for extractions and for the agent's tool arguments (`Agent(grounded_arguments=
    ...)`). `numbers_if_written`: under "auto", a number is held only where `text` writes a
    digit, as an extraction's field may be absent from its text; a tool's call waits for its
    number instead (False), the tool not offered until the conversation writes one.
    `optional_held`: under "auto", a property that is not required is held too (an
    extraction's optional field is the text's or None); a tool's optional parameter is left
    free (False): its value is most often its default or of a kind no conversation writes (a
    unit, a method), which a held argument could only replace by some unrelated span.
    `text_known`: `text` is the one the values come from, so an optional email or phone number
    is written or None by what it holds (`_shaped_or_none`) and currency codes are narrowed to
    those it writes (`_currencies_written`), and a field the text labels is held to what
    follows the label (`labels`); a tool's marks are made once, before any conversation
    (False), and leave such fields as their schema says."""
    marked = copy.deepcopy(schema)
    chosen: dict[str, tuple[str, str]] = {}
    _visit(marked, "", "", None, "", "", _Rule(text, mode, numbers_if_written, optional_held, text_known), chosen)
    return marked, chosen


@dataclass(frozen=True)
class _Rule:
    """What decides a field that says nothing itself: the mode, and for "auto" the text."""

    text: str
    mode: GroundedMode
    numbers_if_written: bool
    optional_held: bool
    text_known: bool


def _visit(node: Any, pointer: str, path: str, inherited: bool | None, name: str, description: str,
           rule: _Rule, chosen: dict[str, tuple[str, str]], optional: bool = False) -> None:
    if not isinstance(node, dict):
        return
    own = node.get(GROUNDED_KEY)
    explicit = own if isinstance(own, bool) else inherited
    description = node.get("description", description) if isinstance(node.get("description"), str) else description
    required = node.get("required") if isinstance(node.get("required"), list) else []
    for key, sub in (node.get("properties") or {}).items():
        _visit(sub, f"{pointer}/properties/{escape(key)}", f"{path}/{escape(key)}", None, key, "", rule, chosen,
               key not in required)
        if rule.mode == "auto" and rule.text_known and _shaped_or_none(sub, key, rule.text) and key not in required:
            node["required"] = required = [*required, key]  # written, as the value is the text's
    if isinstance(node.get("items"), dict):
        _visit(node["items"], f"{pointer}/items", f"{path}/*", explicit, name, description, rule, chosen, optional)
        _bound_held_list(node, rule.text)
    for keyword in ("anyOf", "oneOf"):
        branches = [b for b in node.get(keyword) or () if isinstance(b, dict)]
        # A number that may also be written as a string (pydantic's Decimal): where the number
        # is held, the string is held to the same numbers' spellings (a span would be "£18.50",
        # no number at all).
        spelled = any(_kind(b) == "number" for b in branches)
        strings = []
        for i, branch in enumerate(node.get(keyword) or ()):
            if spelled and isinstance(branch, dict) and _kind(branch) == "string":
                strings.append(branch)
                continue
            _visit(branch, f"{pointer}/{keyword}/{i}", path, explicit, name, description, rule, chosen, optional)
        if any(b.get(GROUNDED_KEY) is True and _kind(b) == "number" for b in branches):
            for branch in strings:
                if branch.get(GROUNDED_KEY) is not False:
                    branch[GROUNDED_KEY] = NUMBERS_AS_STRINGS
    if (explicit if explicit is not None else rule.mode is not False) and rule.text_known \
            and _currencies_written(node, rule.text):
        chosen[pointer] = (path or "", "enum")
        return
    kind = _kind(node)
    if kind is None:
        return
    hold = explicit if explicit is not None else _picked(node, kind, name, description, rule, optional)
    if hold:
        node[GROUNDED_KEY] = True
        chosen[pointer] = (path or "", kind)
        if kind == "string" and explicit is None and rule.mode == "auto" and not {"pattern", "format"} & node.keys():
            for named, shape, written in _NAMED_SHAPES:
                if named.fullmatch(name) and (written is None or written(rule.text)):
                    node["pattern"] = shape
            if _STREET.fullmatch(name) and "pattern" not in node and _NUMBER.search(rule.text):
                node["pattern"] = "[0-9]"
            labelled = labelled_values(rule.text, name, description) if rule.text_known else []
            if labelled and not path.endswith("/*") and "pattern" not in node:
                node["pattern"] = "^(?:" + "|".join(map(_regex_literal, candidates(labelled))) + ")$"
    elif own is True:
        node[GROUNDED_KEY] = False


def _currencies_written(node: dict[str, Any], text: str) -> bool:
    """An enum of currency codes narrowed to those `text` writes (by code, symbol or name:
    `currencies.written_currencies`), where it writes any of them (True). Shown `<one of "GBP",
    "USD", "EUR", ...>` and "£18.50", SmolLM2-135M wrote the first code listed for most prices."""
    values = node.get("enum")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return False
    if sum(v in CODES for v in values) < 2:  # not a list of currencies ("ALL" may be a word)
        return False
    written = written_currencies(text)
    kept = [v for v in values if v in written]
    if not kept:
        return False
    node["enum"] = kept
    return True


def _shaped_or_none(node: Any, name: str, text: str) -> bool:
    """Under "auto", a field that may be None, held, and named for a shape whose values a text
    can be searched for (an email address, a phone number: `_NAMED_SHAPES`): where the text
    writes a value of that shape, the field is such a span, not None (True: the field is then
    written); where it writes none, None. Asked for a value it may leave out, SmolLM2-135M wrote
    null for the phone number or email address the text gave in 9 of the tune half's 18."""
    branches = node.get("anyOf") if isinstance(node, dict) and not isinstance(node.get(GROUNDED_KEY), bool) else None
    if not isinstance(branches, list) or len(branches) != 2:
        return False
    nulls = [b for b in branches if isinstance(b, dict) and b.get("type") == "null"]
    held = [b for b in branches if isinstance(b, dict) and b.get(GROUNDED_KEY) is True and _kind(b) == "string"]
    shapes = [(shape, written) for named, shape, written in _NAMED_SHAPES
              if written is not None and named.fullmatch(name)]
    if len(nulls) != 1 or len(held) != 1 or not shapes or held[0].get("pattern", shapes[0][0]) != shapes[0][0]:
        return False
    found = shapes[0][1](text)
    node["anyOf"] = held if found else nulls
    return found


def _bound_held_list(node: dict[str, Any], text: str) -> None:
    """A list of strings held to `text` has at most as many items as the text has distinct
    words. A small model that repeats one item (`["linen", "linen", ...]`) then closes the list
    within a few hundred tokens, rather than running the whole document out of its budget."""
    items = node["items"]
    words = len(set(_WORD.findall(text.casefold())))
    if words and items.get(GROUNDED_KEY) is True and _kind(items) == "string":
        bound, least = node.get("maxItems"), node.get("minItems", 0)
        held = min(bound, words) if isinstance(bound, int) and not isinstance(bound, bool) else words
        node["maxItems"] = max(held, least) if isinstance(least, int) and not isinstance(least, bool) else held


def _kind(node: dict[str, Any]) -> str | None:
    """"string" or "number" for a leaf a grammar can hold to a text, else None."""
    if "enum" in node or "const" in node:
        return None
    types = node.get("type")
    types = [types] if isinstance(types, str) else types if isinstance(types, list) else []
    if "string" in types:
        return "string"
    if "number" in types or "integer" in types:
        return "number"
    return None


def _picked(node: dict[str, Any], kind: str, name: str, description: str, rule: _Rule, optional: bool) -> bool:
    """The mode's choice for a field that says nothing itself."""
    if rule.mode is False:
        return False
    if rule.mode is True:
        return True
    # "auto": decided on the tune half of `python -m bench.values` (see docs/extraction.md), and
    # for tools on `bench.agent_values` and `bench.bfcl` (see docs/agents.md).
    if optional and not rule.optional_held:
        return False
    if kind == "number":
        return bool(_NUMBER.search(rule.text)) or not rule.numbers_if_written
    if node.get("format") in _REWORDED_FORMATS:
        return False
    return not _COMPOSED.search(f"{name} {description}")


def _record(chosen: dict[str, tuple[str, str]], notes: tuple[grammar.GroundedField, ...]) -> tuple[FieldGrounding, ...]:
    """Each held value's path with what the grammar did there (a value held at every place its
    schema was lowered, else the first reason it was not)."""
    out = []
    for pointer, (path, kind) in chosen.items():
        if kind == "enum":  # narrowed in the schema itself (`_currencies_written`)
            out.append(FieldGrounding(path, kind, True))
            continue
        # A branch of an anyOf (`str | None`) is lowered under its parent's pointer.
        here = [n for n in notes if n.kind == kind and (n.pointer == pointer or n.pointer.startswith(pointer + "/")
                                                        or pointer.startswith(n.pointer + "/"))]
        if not here:
            out.append(FieldGrounding(path, kind, False, "no value of this field is written by the grammar"))
            continue
        refused = [n.reason for n in here if not n.grounded]
        out.append(FieldGrounding(path, kind, not refused, refused[0] if refused else ""))
    return tuple(out)

