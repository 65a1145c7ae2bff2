"""Long-running mailslot processes left idle, and the CPU time they use meanwhile.

Used by ``test_idle_cpu.py`` (a generous bound) and ``bench/bench_idle.py`` (the figures).
Each process runs as installed: Claude Code's waiter (``hook claude wait``), the watcher
(``watch``) and the MCP server with ``--channel``, after its handshake.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from support import put_config

KINDS = ("waiter", "watch", "serve --channel")
SESSION = "idle-session-1"
_HANDSHAKE = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "idle-check", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _prepare(root: Path) -> None:
    """A mailbox with some history, each agent opted in to the wake its process serves."""
    box = Mailbox(FileStore(root), Identity("gemini", "--agent"))
    for n in range(20):
        box.send(["claude", "codex"], f"old {n}", "x")
    store = FileStore(root)
    put_config(store, {"agents": {
        "claude": {"wake_on_mail": True, "wake_method": "claude-rewake"},
        "codex": {"wake_on_mail": True, "wake_method": "claude-channel"},
    }})
    for agent in ("claude", "codex"):  # all of it already shown: nothing to wake for
        Mailbox(store, Identity(agent, "--agent")).done(
            [i for i, _ in store.entries(agent, ("unread",))])


@contextmanager
def idle_processes(root: Path, log: Path) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """The three processes, each started and ready, then left alone; stopped after."""
    _prepare(root)
    env = {**os.environ, "MAILSLOT_DIR": str(root)}
    mailslot = [sys.executable, "-m", "mailslot"]
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        procs["waiter"] = subprocess.Popen(
            [*mailslot, "--agent", "claude", "hook", "claude", "wait"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert procs["waiter"].stdin is not None
        procs["waiter"].stdin.write(json.dumps({
            "session_id": SESSION, "hook_event_name": "Stop", "cwd": str(root),
            "stop_hook_active": False}).encode())
        procs["waiter"].stdin.close()
        with log.open("w") as out:
            procs["watch"] = subprocess.Popen([*mailslot, "watch"], env=env, stdout=out,
                                              stderr=subprocess.STDOUT)
        procs["serve --channel"] = subprocess.Popen(
            [*mailslot, "--agent", "codex", "serve", "--channel"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        server = procs["serve --channel"]
        assert server.stdin is not None and server.stdout is not None
        for message in _HANDSHAKE:
            server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()
        server.stdout.readline()  # the answer to initialize: the server is up
        _wait(lambda: (root / "waiters" / "claude" / SESSION).is_file(), "the waiter")
        _wait(lambda: "watching" in log.read_text(), "the watcher")
        yield procs
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None and not stream.closed:
                    stream.close()


def _wait(ready: object, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not ready():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not start")
        time.sleep(0.01)


def idle_cpu(procs: dict[str, subprocess.Popen[bytes]], seconds: float) -> dict[str, float]:
    """CPU seconds each process used over ``seconds`` of idleness (after a settling second)."""
    time.sleep(1.0)
    before = {kind: cpu_seconds(p.pid) for kind, p in procs.items()}
    time.sleep(seconds)
    for kind, proc in procs.items():
        assert proc.poll() is None, f"{kind} ended while idle (exit {proc.returncode})"
    return {kind: cpu_seconds(p.pid) - before[kind] for kind, p in procs.items()}
