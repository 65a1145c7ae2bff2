"""A real ``mailslot web`` process for tests: started on a free port, its one-time link
read from what it prints, stopped with Ctrl-C (SIGINT) as a person would."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

START_SECONDS = 30.0


@dataclass
class WebServer:
    process: subprocess.Popen[str]
    login: str  # the one-time link
    reader: threading.Thread
    lines: list[str] = field(default_factory=list)

    def stop(self) -> int:
        """Ctrl-C; returns the exit code once everything it printed has been read."""
        code = stop(self.process)
        self.reader.join(timeout=10)
        return code

    @property
    def base(self) -> str:
        return self.login.split("/login", 1)[0]

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])


def _read(process: subprocess.Popen[str], lines: list[str], ready: threading.Event) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if "/login?token=" in line:
            ready.set()
    ready.set()


@contextmanager
def web_server(*args: str) -> Iterator[WebServer]:
    """``mailslot web --port 0 ARGS`` over ``$MAILSLOT_DIR``, until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mailslot", "web", *(args or ("--port", "0"))],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
    lines: list[str] = []
    ready = threading.Event()
    reader = threading.Thread(target=_read, args=(process, lines, ready), daemon=True)
    reader.start()
    try:
        ready.wait(START_SECONDS)
        found = [m.group(0) for line in lines if (m := re.search(r"http://\S+", line))]
        assert found, f"mailslot web printed no link: {lines}"
        yield WebServer(process, found[0], reader, lines)
    finally:
        stop(process)
        reader.join(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


def stop(process: subprocess.Popen[str]) -> int:
    """Ctrl-C, then wait (killed only if it hangs, which fails the caller's check)."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return -9

