"""A FIFO, or a link, planted where mailslot keeps a record: every reader refuses it at
once, never waits on it, and ``doctor`` names it.

Real processes with a timeout, since the failure is a hang: ``who``, ``doctor``,
``status ID`` and the MCP server's ``list_agents`` each finish within a generous bound
with a FIFO at each kind of record they read, and a symlinked ``watcher/`` folder is
never followed for the watcher's lock, record or log.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookkit import fixture, session_of
from mailslot import FileStore
from mailslot.access import authority
from mailslot.mail import watchers
from support import put_config, run_cli

BOUND = 20.0
"""Seconds a command may take here; a reader waiting on a FIFO never ends by itself."""
HOST = os.uname().nodename
KINDS = {  # a record of each kind that who, doctor, status and list_agents may read
    "config": "config.json",
    "config lock": "config.lock",
    "watcher record": f"watcher/{HOST}.json",
    "watcher lock": f"watcher/{HOST}.lock",
    "watcher log": f"watcher/{HOST}.log",
    "events log": "log/events.jsonl",
    "registry": "registry/dave.json",
    "gate": "gates/bob/accept",
    "gate passed": "gates/bob/passed",
    "hook session": "hook-sessions/carol/*",
    "session": f"sessions/carol/{session_of('claude-session-start')}",
    "session marks": "sessions/carol/*.marks",
    "latest session": "latest/carol/claude",
    "presence": "presence/alice/*.json",
    "send limit": "limits/sends.alice",
    "wake limit": "limits/wakes.bob",
    "sent index": "sent/alice",
    "tally": "tally/bob.json",
    "tally lock": "tally/bob.lock",
    "queued wake": "wake/pending/bob/*",
    "search log": "index/new.log",
    "message": "agents/bob/new/*.md",
    "broadcast": "broadcast/live/*.md",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mailbox holding a record of every kind (made once; each test copies it)."""
    base = tmp_path_factory.mktemp("world")
    root = base / "mailbox"
    env = {**os.environ, "MAILSLOT_DIR": str(root), "HOME": str(base),
           "MAILSLOT_ON_DEMAND_WATCHER": "0"}

    def run(*argv: str, stdin: bytes = b"") -> None:
        done = subprocess.run([sys.executable, "-m", "mailslot", *argv], input=stdin,
                              env=env, cwd=base, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr

    run("init")
    put_config(FileStore(root), {"owner": "sarah", "agents": {"bob": {
        "wake_on_mail": True, "wake_method": "command", "command": ["/bin/true", "{id}"]}}})
    run("--agent", "alice", "send", "--to", "bob", "--subject", "s", "--body", "b")
    run("--agent", "alice", "send", "--to", "carol", "--subject", "s", "--body", "b")
    run("--agent", "carol", "hook", "claude", "session-start",
        stdin=fixture("claude-session-start"))
    run("--agent", "carol", "broadcast", "--subject", "news", "--body", "b")
    run("--agent", "bob", "gate", "on")
    run("--agent", "alice", "serve")  # its presence record stays, stopped
    authority.register(FileStore(root), "dave", path=str(base / "dave.cred"))
    (root / "watcher").mkdir(mode=0o700)
    for suffix in (".lock", ".log"):
        (root / "watcher" / f"{HOST}{suffix}").touch(mode=0o600)
    (root / "watcher" / f"{HOST}.json").write_text(json.dumps(
        {"pid": os.getpid(), "how": "on-demand", "host": HOST, "started": "now"}))
    return root


@pytest.fixture
def planted_world(world: Path, root: Path) -> Iterator[Path]:
    """The world, copied to this test's mailbox, with the watcher's lock held as a
    running watcher holds it (so every reader goes on to read its record)."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(world, root, symlinks=True)
    lock = os.open(root / "watcher" / f"{HOST}.lock", os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        yield root
    finally:
        os.close(lock)


def message_id(root: Path) -> str:
    return next((root / "agents/bob/new").iterdir()).name[:-3]


def plant_fifo(root: Path, pattern: str) -> Path:
    [path] = root.glob(pattern)
    path.unlink()
    os.mkfifo(path, 0o600)
    return path


def start(*argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "mailslot", *argv],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def finished(proc: subprocess.Popen[bytes], what: str) -> tuple[int, str]:
    """``proc``'s exit status and output, failing the test if it outlives :data:`BOUND`."""
    try:
        out, err = proc.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"{what} hangs") from None
    return proc.returncode, (out + err).decode()


def list_agents(server: subprocess.Popen[bytes]) -> str:
    """``list_agents`` over the MCP server's stdio (raw JSON-RPC), within the bound
    once the server is up (its start, the MCP SDK's import, may take longer on a loaded
    machine)."""
    ask(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "t", "version": "1"}}})
    answer(server, 1, 120.0, "the server's start")
    ask(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    ask(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "list_agents", "arguments": {}}})
    return answer(server, 2, BOUND, "list_agents")


def ask(server: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert server.stdin is not None
    server.stdin.write(json.dumps(message).encode() + b"\n")
    server.stdin.flush()


def answer(server: subprocess.Popen[bytes], number: int, seconds: float, what: str) -> str:
    """The server's answer to request ``number``, failing if none comes in time."""
    assert server.stdout is not None
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([server.stdout], [], [], left)[0]:
            raise AssertionError(f"{what} hangs")
        line = server.stdout.readline()
        if json.loads(line).get("id") == number:
            return line.decode()


@pytest.mark.parametrize("kind", KINDS)
def test_a_fifo_at_any_record_hangs_nothing_and_doctor_names_it(
        planted_world: Path, kind: str) -> None:
    root = planted_world
    message = message_id(root)
    fifo = plant_fifo(root, KINDS[kind])
    procs = {"who": start("who"), "doctor": start("doctor"),
             "status": start("status", message),
             "list_agents": start("--agent", "alice", "serve")}
    try:
        listed = list_agents(procs["list_agents"])
    finally:
        procs["list_agents"].kill()
    shown = {what: finished(proc, what) for what, proc in procs.items()}
    assert '"result"' in listed  # a tool result (an error naming the path, or the agents)
    code, doctor = shown["doctor"]
    assert code == 1 and f"{fifo} is not a regular file" in doctor, doctor
    for what in ("who", "status"):
        assert "Traceback" not in shown[what][1], shown[what]
    assert os.path.exists(fifo)  # left for a person: doctor --fix removes no FIFO


def test_a_symlinked_watcher_folder_is_never_followed(root: Path, tmp_path: Path) -> None:
    put_config(FileStore(root), {"agents": {"bob": {
        "wake_on_mail": True, "wake_method": "command", "command": ["/bin/true", "{id}"]}}})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (root / "watcher").symlink_to(elsewhere)
    on_demand = {**os.environ}
    on_demand.pop(watchers.OFF_SWITCH)
    sent = run_cli("--agent", "alice", "send", "--to", "bob", "--subject", "s", "--body", "b",
                   env=on_demand)
    assert sent.returncode == 0
    assert sent.stderr == (f"mailslot: note: wakes cannot happen now: a watcher could not be "
                           f"started ({root / 'watcher'} is a symlink; mailslot does not "
                           "follow links)\n")
    watch = run_cli("watch")
    assert watch.returncode == 1
    assert watch.stderr == (f"mailslot: error: {root / 'watcher'} is a symlink; mailslot "
                            "does not follow links\n")
    assert run_cli("who").returncode == 1
    doctor = run_cli("doctor")
    named = [line for line in doctor.stdout.splitlines() if str(root / "watcher") in line]
    assert named == [f"problem: {root / 'watcher'} is a symlink; mailslot never follows it "
                     "(remove it)"]
    assert list(elsewhere.iterdir()) == []  # no lock, record or log made through the link
