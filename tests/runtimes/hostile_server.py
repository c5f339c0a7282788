"""A local HTTP server on 127.0.0.1 that answers each request with whatever bytes the test set:
lying headers, cut bodies, endless bodies, any status. It writes at most `MAX_WRITTEN` bytes per
answer and stops by itself once the client hangs up, so no test can leave it running."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_WRITTEN = 64 * 2**20


@dataclass
class Reply:
    """One raw answer: the head's lines (status line and headers), then the body's pieces, each
    written and flushed in turn (`pause` seconds apart); `repeat` writes the last piece again
    and again, up to MAX_WRITTEN bytes in all (an endless body)."""

    head: list[str]
    pieces: list[bytes] = field(default_factory=list)
    repeat: bool = False
    pause: float = 0.0

    def chunks(self) -> Iterable[bytes]:
        yield ("".join(line + "\r\n" for line in self.head) + "\r\n").encode("latin-1")
        yield from self.pieces
        while self.repeat and self.pieces:
            yield self.pieces[-1]


def answer(status: int, body: bytes, content_type: str = "application/json", *, length: int | None = None) -> Reply:
    """A plain answer; `length` declares a Content-Length other than the body's own."""
    head = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}",
            f"Content-Length: {len(body) if length is None else length}", "Connection: close"]
    return Reply(head, [body])


def stream(pieces: list[bytes], *, status: int = 200, repeat: bool = False) -> Reply:
    """An event stream with no declared length: it ends when the connection closes."""
    head = [f"HTTP/1.1 {status} X", "Content-Type: text/event-stream", "Connection: close"]
    return Reply(head, pieces, repeat=repeat)


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, socket.timeout)):
            super().handle_error(request, client_address)


class HostileServer:
    """Answers every POST with `self.reply` (set it between requests); counts the requests."""

    def __init__(self) -> None:
        self.reply: Reply = answer(500, b"{}")
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                owner.requests += 1
                reply = owner.reply
                self.close_connection = True
                written = 0
                for piece in reply.chunks():
                    self.wfile.write(piece)
                    self.wfile.flush()
                    written += len(piece)
                    if written > MAX_WRITTEN:
                        break
                    if reply.pause:
                        time.sleep(reply.pause)

            def log_message(self, *args):
                pass

        self.httpd = _Quiet(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
