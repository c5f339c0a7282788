"""Reading an OpenAI-style answer (a completion, or one stream chunk) whose shape is checked
field by field: a server's JSON of the wrong shape is a `MalformedAnswer` naming the path that
was wrong (``choices[0].message.content: expected a string, got int``), never a raw
`AttributeError` from deep inside the runtime."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._errors import MalformedAnswer, ServerError
from ._protocol import TokenScore, Usage


@dataclass(frozen=True)
class Answer:
    """What a completion (or one stream chunk) says: its text, finish reason and token usage
    (`usage` is None where it reports none), and the chosen tokens' log-probabilities where the
    server returned them (`scores`, else None)."""

    text: str
    finish_reason: str | None
    usage: Usage | None
    scores: list[TokenScore] | None = None


def read_completion(answer: Any, *, source: str = "") -> Answer:
    """A non-streamed answer: its first choice's text (`message.content`, else `text`).
    `source` (the runtime's name) leads the message of any error."""
    return _named(_completion, answer, source)


def read_chunk(chunk: Any, *, source: str = "") -> Answer:
    """One streamed event: the text its choices add (`delta.content`, else `text`), the last
    finish reason it names, and its usage."""
    return _named(_chunk, chunk, source)


def _named(read: Callable[[Any], Answer], value: Any, source: str) -> Answer:
    try:
        return read(value)
    except MalformedAnswer as exc:
        if not source:
            raise
        raise MalformedAnswer(exc.path, exc.problem, source=source) from None


def _completion(answer: Any) -> Answer:
    root = _object(answer, "(answer)")
    _refuse_error(root, "the answer")
    choices = root.get("choices")
    if not isinstance(choices, list) or not choices:
        got = "an empty list" if choices == [] else _kind(choices)
        raise MalformedAnswer("choices", f"expected a non-empty list, got {got}")
    text, finish = _choice(choices[0], "choices[0]", "message")
    return Answer(text, finish, _usage(root.get("usage")), _scores(choices[0]))


def _scores(choice: Any) -> list[TokenScore] | None:
    """The answer's tokens and their log-probabilities: chat's `logprobs.content` (entries of
    `token`, `logprob`, `bytes`) or completions' `logprobs.tokens` with `token_logprobs`. None
    where there are none or they are not of that shape: scores are an extra, never a failure."""
    logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
    if not isinstance(logprobs, dict):
        return None
    pairs: list[tuple[Any, Any, Any]]
    if isinstance(logprobs.get("content"), list):
        pairs = [(e.get("token"), e.get("logprob"), e.get("bytes")) if isinstance(e, dict) else (None, None, None)
                 for e in logprobs["content"]]
    elif isinstance(logprobs.get("tokens"), list) and isinstance(logprobs.get("token_logprobs"), list):
        pairs = [(t, lp, None) for t, lp in zip(logprobs["tokens"], logprobs["token_logprobs"], strict=False)]
    else:
        return None
    scores = []
    for token, logprob, data in pairs:
        value = _log_probability(logprob)
        if not isinstance(token, str) or value is None:
            return None
        if isinstance(data, list) and all(isinstance(b, int) and 0 <= b < 256 for b in data):
            raw = bytes(data)
        else:
            raw = token.encode("utf-8", "surrogatepass")
        scores.append(TokenScore(raw, value, None))
    return scores


def _log_probability(value: Any) -> float | None:
    """A server's logprob as a float of at most 0 (above 0 is rounding); one past a float's
    range (JSON allows any number of digits) is its limit, -inf or 0; None where it is no
    number at all (NaN, a string)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        number = -math.inf if value < 0 else 0.0
    return None if math.isnan(number) else min(0.0, number)


def _chunk(chunk: Any) -> Answer:
    root = _object(chunk, "(chunk)")
    _refuse_error(root, "the stream")
    choices = root.get("choices")
    if choices is None:
        choices = []
    if not isinstance(choices, list):
        raise MalformedAnswer("choices", f"expected a list, got {_kind(choices)}")
    pieces: list[str] = []
    finish: str | None = None
    scores: list[TokenScore] | None = None
    for i, choice in enumerate(choices):
        text, said = _choice(choice, f"choices[{i}]", "delta")
        pieces.append(text)
        finish = said or finish
        found = _scores(choice)
        if found is not None:
            scores = (scores or []) + found
    return Answer("".join(pieces), finish, _usage(root.get("usage")), scores)


def _choice(value: Any, path: str, body: str) -> tuple[str, str | None]:
    choice = _object(value, path)
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise MalformedAnswer(f"{path}.finish_reason", f"expected a string or null, got {_kind(finish)}")
    message = choice.get(body)
    if message is not None:
        content = _object(message, f"{path}.{body}").get("content")
        text = _content(content, f"{path}.{body}.content")
        if text:
            return text, finish
    raw = choice.get("text")
    if raw is not None and not isinstance(raw, str):
        raise MalformedAnswer(f"{path}.text", f"expected a string or null, got {_kind(raw)}")
    return raw or "", finish


def _content(value: Any, path: str) -> str:
    """A message's content: a string, null, or OpenAI's list of parts, whose text parts join."""
    if value is None or isinstance(value, str):
        return value or ""
    if not isinstance(value, list):
        raise MalformedAnswer(path, f"expected a string, a list of text parts or null, got {_kind(value)}")
    texts = []
    for i, part in enumerate(value):
        part = _object(part, f"{path}[{i}]")
        if part.get("type") != "text":
            raise MalformedAnswer(f"{path}[{i}].type", f"expected 'text', got {_shown(part.get('type'))}")
        text = part.get("text")
        if not isinstance(text, str):
            raise MalformedAnswer(f"{path}[{i}].text", f"expected a string, got {_kind(text)}")
        texts.append(text)
    return "".join(texts)


def _usage(value: Any) -> Usage | None:
    if value is None:
        return None
    usage = _object(value, "usage")
    counts = []
    for name in ("prompt_tokens", "completion_tokens"):
        count = usage.get(name)
        if count is None:
            count = 0
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise MalformedAnswer(f"usage.{name}", f"expected a non-negative integer, got {_shown(count)}")
        counts.append(count)
    return Usage(counts[0], counts[1])


def _refuse_error(root: dict[str, Any], where: str) -> None:
    if root.get("error") is not None:
        raise ServerError(f"error in {where}: {_shown(root['error'])}", body=str(root["error"])[:2000])


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAnswer(path, f"expected an object, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "bool", int: "int", float: "float",
            type(None): "null"}.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
