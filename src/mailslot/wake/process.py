"""Running a host program for a wake: an argv without a shell, bounded in time.

A program's standard output is discarded (a host can print anything, including the
message it was given), unless the method reads it (a program that answers in JSON on
standard output): then it is kept too, and a failure shows its end
like standard error's. When it fails, the last lines of its standard error are added to
the reason (so they reach the watcher's output, the events log and the sender's failure
notice): at most :data:`STDERR_TAIL` characters, on one line, control characters
replaced, and the value of every variable mailslot gave the child whose name says it is
a secret (``*TOKEN*``, ``*KEY*``...) shown as ``<secret>``.
Each child gets its own process group so a timeout (or the watcher stopping) ends the
child and whatever it started. On Linux a child also dies with its watcher (the kernel's
parent-death signal): a watcher killed mid-wake (``kill -9``) leaves no half-done wake
running, and the next watcher's retry is the one wake done. Elsewhere an orphaned child
runs to its end and the retry may repeat it (docs/wake.md).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

STDERR_TAIL = 300
_STDERR_LINES = 3
_KEPT_BYTES = 8192  # of standard error, from its end
_SECRET_KEY = re.compile(r"TOKEN|SECRET|KEY|PASSWORD|CREDENTIAL", re.IGNORECASE)
_GRACE_SECONDS = 2.0
_TICK_SECONDS = 0.2  # how often a running child's deadline and stop are checked


@dataclass(frozen=True)
class Spawn:
    """One program to start: ``argv[0]`` is looked up on PATH unless it holds a ``/``."""

    argv: list[str]
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # see .environment
    stdin: bytes = b""
    cwd: str | None = None


def find_program(program: str, env: Mapping[str, str] | None = None) -> str | None:
    """The executable ``program`` names, as the child would find it."""
    if "/" in program:
        path = os.path.expanduser(program)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    search = (env if env is not None else os.environ).get("PATH", os.defpath)
    return shutil.which(program, path=search)


_PR_SET_PDEATHSIG = 1
_DEATH_SIGNAL: list[Callable[[], None] | None] = []


def _die_with_parent() -> Callable[[], None] | None:
    """What the child runs before its program (Linux): ask for SIGKILL when the thread
    that started it, a watcher's worker living as long as the watcher, ends. Built once;
    the C function is looked up beforehand, so the child only makes one system call."""
    if not _DEATH_SIGNAL:
        _DEATH_SIGNAL.append(None)
        if sys.platform.startswith("linux"):
            import ctypes

            prctl = ctypes.CDLL(None, use_errno=True).prctl
            kill = int(signal.SIGKILL)
            _DEATH_SIGNAL[0] = lambda: prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
    return _DEATH_SIGNAL[0]


def end(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child and its process group: TERM, then KILL after a grace period."""
    for sig, wait in ((signal.SIGTERM, _GRACE_SECONDS), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def start(spawn: Spawn, err: IO[bytes], *, stdout: int,
          cwd: str | None) -> subprocess.Popen[bytes] | str:
    """Start ``spawn`` in a process group of its own (dying with the watcher on Linux),
    its stdin a pipe and its stderr ``err``; why not (one line) when it cannot start.
    Its environment is the allow-listed part of the watcher's and ``spawn.env``
    (:func:`mailslot.wake.environment.woken`): every woken program starts here.

    ``err`` is an unnamed file, not a pipe: a program that leaves a helper running
    (holding the pipe open) must not look as if it never finished.
    """
    from .environment import woken

    env = woken(spawn.env)
    name = os.path.basename(spawn.argv[0])
    executable = find_program(spawn.argv[0], env)
    if executable is None:
        return f"{name} was not found on PATH"
    if cwd is not None and not os.path.isdir(cwd):
        return f"the folder {cwd} does not exist"
    try:
        return subprocess.Popen(
            spawn.argv, executable=executable, env=env, cwd=cwd,
            stdin=subprocess.PIPE, stdout=stdout, stderr=err,
            start_new_session=True, close_fds=True, preexec_fn=_die_with_parent(),
        )
    except OSError as exc:
        return f"{name} could not be started ({exc.strerror or type(exc).__name__})"


def stderr_said(err: IO[bytes], secrets: Mapping[str, str]) -> str:
    """``; stderr: ...`` from the end of what a failed program wrote (see :func:`start`)."""
    err.seek(max(0, err.seek(0, os.SEEK_END) - _KEPT_BYTES))
    return said_of("stderr", err.read(), secrets)


def run(spawn: Spawn, timeout: float, stop: threading.Event, *,
        stdout: list[bytes] | None = None) -> str | None:
    """Run ``spawn`` to its end; ``None`` on exit status 0, else why it failed (one line).

    The child is ended when ``timeout`` passes or ``stop`` is set (the watcher stopping).
    With ``stdout``, the first :data:`_KEPT_BYTES` of its standard output are appended to
    it, and a failure says how that output ended (``; stdout: ...``) before its stderr.
    """
    name = os.path.basename(spawn.argv[0])
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        proc = start(spawn, err, stdout=subprocess.DEVNULL if stdout is None else out.fileno(),
                     cwd=spawn.cwd)
        if isinstance(proc, str):
            return proc
        failed = _wait(proc, spawn, name, timeout, stop)
        if stdout is not None:
            out.seek(0)
            stdout.append(out.read(_KEPT_BYTES))
        if failed is not None or proc.returncode == 0:
            return failed
        said = stderr_said(err, spawn.env)
        if stdout is not None:
            said = said_of("stdout", stdout[-1], spawn.env) + said
    if proc.returncode < 0:
        return f"{name} was ended by signal {-proc.returncode}{said}"
    return f"{name} exited with status {proc.returncode}{said}"


def _wait(proc: subprocess.Popen[bytes], spawn: Spawn, name: str, timeout: float,
          stop: threading.Event) -> str | None:
    """Feed stdin and wait for the end; why it was cut short, or ``None`` if it ended."""
    deadline = time.monotonic() + timeout
    stdin: bytes | None = spawn.stdin
    while True:
        try:
            proc.communicate(stdin, timeout=min(_TICK_SECONDS, timeout))
            return None
        except subprocess.TimeoutExpired:
            stdin = None  # already being written; communicate() resumes it
            if stop.is_set():
                end(proc)
                return f"{name} was stopped: the watcher is stopping"
            if time.monotonic() >= deadline:
                end(proc)
                return f"{name} did not finish within {timeout:g} s (stopped)"


def said_of(label: str, data: bytes, secrets: Mapping[str, str]) -> str:
    """``; LABEL: ...``: the last lines a failed program wrote, safe for one line, every
    secret of ``secrets`` (by its variable's name) shown as ``<secret>``."""
    text = data.decode("utf-8", "replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()][-_STDERR_LINES:]
    if not lines:
        return ""
    shown = " / ".join(lines)
    for key, value in secrets.items():
        if _SECRET_KEY.search(key) and value:
            shown = shown.replace(value, "<secret>")
    shown = "".join(c if c.isprintable() else " " for c in shown)
    if len(shown) > STDERR_TAIL:
        shown = "..." + shown[-(STDERR_TAIL - 3):]
    return f"; {label}: {shown}"
