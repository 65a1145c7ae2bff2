"""Running a host program for a wake: an argv without a shell, bounded in time.

The program's output is discarded, never logged: a host can print anything, including
the message it was given. Each child gets its own process group so a timeout (or the
watcher stopping) ends the child and whatever it started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

_GRACE_SECONDS = 2.0
_TICK_SECONDS = 0.2  # how often a running child's deadline and stop are checked


@dataclass(frozen=True)
class Spawn:
    """One program to start: ``argv[0]`` is looked up on PATH unless it holds a ``/``."""

    argv: list[str]
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # added to the watcher's
    stdin: bytes = b""
    cwd: str | None = None


def find_program(program: str, env: Mapping[str, str] | None = None) -> str | None:
    """The executable ``program`` names, as the child would find it."""
    if "/" in program:
        path = os.path.expanduser(program)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    search = (env if env is not None else os.environ).get("PATH", os.defpath)
    return shutil.which(program, path=search)


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child and its process group: TERM, then KILL after a grace period."""
    for sig, wait in ((signal.SIGTERM, _GRACE_SECONDS), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run(spawn: Spawn, timeout: float, stop: threading.Event) -> str | None:
    """Run ``spawn`` to its end; ``None`` on exit status 0, else why it failed (one line).

    The child is ended when ``timeout`` passes or ``stop`` is set (the watcher stopping).
    """
    env = {**os.environ, **spawn.env}
    name = os.path.basename(spawn.argv[0])
    executable = find_program(spawn.argv[0], env)
    if executable is None:
        return f"{name} was not found on PATH"
    if spawn.cwd is not None and not os.path.isdir(spawn.cwd):
        return f"the folder {spawn.cwd} does not exist"
    try:
        proc = subprocess.Popen(
            spawn.argv, executable=executable, env=env, cwd=spawn.cwd,
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
    except OSError as exc:
        return f"{name} could not be started ({exc.strerror or type(exc).__name__})"
    deadline = time.monotonic() + timeout
    stdin: bytes | None = spawn.stdin
    while True:
        try:
            proc.communicate(stdin, timeout=min(_TICK_SECONDS, timeout))
            break
        except subprocess.TimeoutExpired:
            stdin = None  # already being written; communicate() resumes it
            if stop.is_set():
                _end(proc)
                return f"{name} was stopped: the watcher is stopping"
            if time.monotonic() >= deadline:
                _end(proc)
                return f"{name} did not finish within {timeout:g} s (stopped)"
    if proc.returncode == 0:
        return None
    if proc.returncode < 0:
        return f"{name} was ended by signal {-proc.returncode}"
    return f"{name} exited with status {proc.returncode}"
