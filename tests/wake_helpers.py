"""Helpers for the wake tests: config, fake host programs, waiting with a deadline."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from mailslot import FileStore
from mailslot.wake.claims import Queue
from support import put_config

T = TypeVar("T")

BYPASS = ("--dangerously-skip-permissions", "--yolo", "--dangerously-bypass-approvals-and-sandbox",
          "--full-auto", "--allow-all-tools", "danger-full-access", "bypassPermissions")

_FAKE = """#!{python}
# A fake {name}: records exactly what mailslot asked, then exits {code}.
import json, os, sys, time
record = {{"argv": sys.argv[1:], "env": dict(os.environ), "stdin": sys.stdin.read(),
          "cwd": os.getcwd(), "pid": os.getpid(), "t": time.time()}}
fd = os.open({record!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
os.write(fd, (json.dumps(record) + "\\n").encode())  # one write: readers see whole lines
os.close(fd)
if {hang!r} and not os.path.exists({record!r} + ".hung"):
    open({record!r} + ".hung", "w").write(str(os.getpid()))
    time.sleep(120)
sys.stdout.write({out!r})
sys.exit({code})
"""


def configure(root: Path, agents: dict[str, dict[str, Any]], **top: Any) -> None:
    """Write config.json with these agents (and top-level keys such as wake_retry)."""
    put_config(FileStore(root), {"owner": "sarah", "agents": agents, **top})


def fake_host(bin_dir: Path, name: str, *, code: int = 0, hang_first: bool = False,
              out: str = "") -> Path:
    """An executable ``bin_dir/name`` recording argv, env and stdin; returns its record file.

    ``hang_first``: the first run sleeps (as a host stuck mid-wake) instead of exiting;
    ``out``: what it prints on standard output before it exits.
    """
    bin_dir.mkdir(exist_ok=True)
    record = bin_dir / f"{name}.jsonl"
    program = bin_dir / name
    program.write_text(_FAKE.format(python=sys.executable, name=name, code=code,
                                    record=str(record), hang=hang_first, out=out))
    program.chmod(0o755)
    return record


def calls(record: Path) -> list[dict[str, Any]]:
    """Every recorded run of a fake host, oldest first."""
    if not record.exists():
        return []
    whole = record.read_text().rpartition("\n")[0]  # a line still being written waits
    return [json.loads(line) for line in whole.splitlines() if line.strip()]


def events(root: Path, prefix: str = "wake_") -> list[dict[str, Any]]:
    """The wake lines of the events log."""
    path = root / "log" / "events.jsonl"
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [e for e in lines if str(e.get("event", "")).startswith(prefix)]


def queue_empty(root: Path) -> bool:
    return not Queue(FileStore(root)).agents()


def wait_until(check: Callable[[], T], seconds: float = 15.0, what: str = "condition") -> T:
    """Poll ``check`` until it returns something truthy; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.02)


def accepted_lines(server: socket.socket) -> Iterator[list[dict[str, Any]]]:
    """The JSON lines each connection to a listening Unix socket sent, connection by
    connection, until the socket is closed (a fake door or receipt socket)."""
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
        yield [json.loads(line) for line in data.decode().splitlines() if line]

def watcher_pids(root: Path | str) -> list[int]:
    """Every ``mailslot watch`` process of this mailbox (found in /proc by its
    environment: a folder is in MAILSLOT_DIR (and argv), a database in MAILSLOT_STORE,
    never in argv)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        named = {f"MAILSLOT_DIR={root}".encode(), f"MAILSLOT_STORE={root}".encode()}
        if b"watch" in argv and named & set(env) and state != "Z":
            found.append(int(entry))
    return found
