"""The parent of a stdio MCP server on Linux, so that every process the server starts stops with it.

Run as `python -I _supervisor.py COMMAND ARGS...` in the server's place. It makes itself a
child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), so a process the server starts that outlives
its own parent, or moves to a session or process group of its own, is re-parented to it
rather than to init and stays findable. It starts the server on its own stdin, stdout and
stderr and lets go of its copies of the pipes, so closing stdin still reaches the server. When
the server exits (or this process gets SIGTERM), every process still below it gets SIGTERM, then
SIGKILL after `GRACE` seconds; it exits with the server's status once none is left, all within
the SDK's two-second wait for the server to exit.

Only the standard library: it runs apart from the host's imports (`-I`: no script folder on
the path, no PYTHON* variables).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL for what the server left running."""
KILL_WAIT = 1.0
"""Seconds to wait for SIGKILLed processes to be gone (re-parented ones included)."""
POLL = 0.02


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: _supervisor.py COMMAND [ARGS...]", file=sys.stderr)
        return 2
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"agentkit: prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 126
    watched = {signal.SIGCHLD, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)  # taken from the queue below, never lost
    try:
        server = os.posix_spawnp(argv[0], argv, dict(os.environ), setsigmask=())
    except OSError as exc:
        print(f"agentkit: cannot start the MCP server {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    status: int | None = None
    while status is None:
        status = _reap(server)
        if status is None:
            info = signal.sigtimedwait(watched, 1.0)
            if info is not None and info.si_signo == signal.SIGTERM:
                break
    _stop_all()
    if status is None:
        status = _reap(server)
    if status is None:
        return 128 + signal.SIGTERM
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def _reap(server: int) -> int | None:
    """Reap every exited child; the server's wait status, if it was among them."""
    found = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        if pid == server:
            found = status


def _below() -> list[int]:
    """The live processes below this one (zombies left out: they are reaped, not signalled)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                fields = file.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != b"Z":
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [os.getpid()]
    while todo:
        for child in parents.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def _stop_all() -> None:
    """SIGTERM to everything below, SIGKILL to what is left after `GRACE` seconds. Each
    process is signalled once per step, as it is seen: killing one re-parents its children here."""
    for signum, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, KILL_WAIT)):
        deadline = time.monotonic() + wait
        signalled: set[int] = set()
        left = _below()
        while left and time.monotonic() < deadline:
            _signal_all([pid for pid in left if pid not in signalled], signum)
            signalled.update(left)
            time.sleep(POLL)
            _reap(-1)
            left = _below()
        if not left:
            return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
