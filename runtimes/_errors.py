"""Typed failures of a runtime, so callers can tell a bad server from a bad budget."""

from __future__ import annotations


class RuntimeFailure(Exception):
    """Base class of every error a runtime raises."""


class RuntimeUnavailable(RuntimeFailure, ImportError):
    """An optional dependency or model file the runtime needs is not installed."""


class ConnectionFailure(RuntimeFailure):
    """The server could not be reached (refused, reset, DNS), after any retries."""


class StreamInterrupted(ConnectionFailure):
    """A streamed answer ended before the server said it was finished.

    What arrived is kept in `text`, but it is never passed on as a finished document.
    """

    def __init__(self, message: str, *, text: str = ""):
        super().__init__(message)
        self.text = text


class ServerError(RuntimeFailure):
    """The server answered with an error status (5xx or 429 after retries, or any 4xx)."""

    def __init__(self, message: str, *, status: int | None = None, body: str = ""):
        super().__init__(message)
        self.status = status
        self.body = body


class MalformedAnswer(ServerError):
    """An answer of the wrong shape: `path` names the JSON field that was wrong
    (``choices[0].message.content``), and the message says what was expected there."""

    def __init__(self, path: str, problem: str, *, source: str = "", body: str = ""):
        super().__init__(f"{source}: {path}: {problem}" if source else f"{path}: {problem}", body=body)
        self.path = path
        self.problem = problem


class ResponseTooLarge(ServerError):
    """An answer longer than the runtime's bound on what it reads (`max_bytes`); reading
    stopped there, so a runaway server cannot fill the client's memory."""

    def __init__(self, message: str, *, max_bytes: int):
        super().__init__(message)
        self.max_bytes = max_bytes


class GenerationTimeout(RuntimeFailure, TimeoutError):
    """A generation took longer than the runtime's timeout."""


class GrammarIgnored(RuntimeFailure):
    """A finished answer that the requested grammar rejects (a server that ignored it)."""

    def __init__(self, message: str, *, text: str):
        super().__init__(message)
        self.text = text


class TokenBudgetExceeded(RuntimeFailure):
    """A whole document was required, but the generation stopped at its token budget."""

    def __init__(self, message: str, *, text: str = ""):
        super().__init__(message)
        self.text = text


class InvalidRequest(RuntimeFailure, TypeError, ValueError):
    """An argument of `generate` or `stream` that no model could be asked with: `argument` names
    it (``"max_tokens"``, ``"messages[2].role"``) and `reason` says what is wrong.

    A `TypeError` and a `ValueError` too, so code that caught either for a bad argument still does.
    """

    def __init__(self, argument: str, reason: str):
        self.argument = argument
        self.reason = reason
        super().__init__(f"{argument}: {reason}")
