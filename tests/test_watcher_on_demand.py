"""The watcher starts itself: real processes, a real lock, a real slow wake program.

A send, hook or server that finds an agent with a wake and no watcher holding this
mailbox's lock on this machine starts one detached; it exits when quiet; exactly one
runs whoever starts it; ``kill -9`` mid-wake leaves the wake to the next one, done once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from hookkit import fixture
from mailslot import FileStore, Mailbox
from mailslot.backends import open_store
from mailslot.core.durable import read_file
from mailslot.core.errors import UnsafePath
from mailslot.mail import watchers
from mailslot.wake.claims import Queue
from pgcluster import Cluster
from support import put_config, run_cli
from wake_helpers import configure, events, queue_empty, wait_until, watcher_pids

SLOW = """#!/bin/sh
# a slow wake: records its start, hangs the first time, records its end
echo "start $1 $$" >> {calls}
if [ ! -e {calls}.first ]; then : > {calls}.first; sleep 60; fi
echo "done $1 $$" >> {calls}
"""


@pytest.fixture(autouse=True)
def on_demand(monkeypatch: pytest.MonkeyPatch, root: Path) -> Iterator[None]:
    """Watchers may start here; every one still running is ended afterwards."""
    monkeypatch.delenv(watchers.OFF_SWITCH)
    yield
    for pid in watcher_pids(root):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)




def slow_agent(tmp_path: Path) -> tuple[dict[str, object], Path]:
    calls = tmp_path / "calls"
    script = tmp_path / "slow-wake"
    script.write_text(SLOW.format(calls=calls))
    script.chmod(0o755)
    return {"wake_on_mail": True, "wake_method": "command",
            "command": [str(script), "{id}"]}, calls


def recorder(tmp_path: Path) -> tuple[dict[str, object], Path]:
    calls = tmp_path / "calls"
    script = tmp_path / "wake"
    script.write_text(f'#!/bin/sh\necho "$1" >> {calls}\n')
    script.chmod(0o755)
    return {"wake_on_mail": True, "wake_method": "command",
            "command": [str(script), "{id}"]}, calls


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def send(*argv: str) -> subprocess.CompletedProcess[str]:
    return run_cli("--agent", "alice", "send", "--subject", "s", "--body", "b", *argv)


def queue_a_wake(root: Path, to: str = "bob") -> str:
    """A send that queues a wake and starts no watcher (as if the one it found was
    killed just after): what a hook or server then finds waiting."""
    sent = run_cli("--agent", "alice", "send", "--subject", "s", "--body", "b", "--to", to,
                   "--json", env={**os.environ, watchers.OFF_SWITCH: "0"})
    assert sent.returncode == 0, sent.stderr
    assert Queue(FileStore(root)).agents() == [to] and not watcher_pids(root)
    return str(json.loads(sent.stdout)["id"])


def test_a_send_starts_a_watcher_that_wakes_and_exits_when_quiet(
        root: Path, tmp_path: Path) -> None:
    agent, calls = recorder(tmp_path)
    configure(root, {"bob": agent}, watcher={"idle_seconds": 2})
    sent = send("--to", "bob", "--json")
    assert sent.returncode == 0 and sent.stderr == ""
    message = json.loads(sent.stdout)["id"]
    wait_until(lambda: lines(calls) == [message], 30, what="the wake")
    running = watchers.record(FileStore(root))
    assert running is not None and running["how"] == "on-demand"
    assert running["pid"] in watcher_pids(root) and running["host"] == os.uname().nodename
    who = json.loads(run_cli("who", "--json").stdout)
    assert next(a for a in who if a["name"] == "bob")["watcher"]["how"] == "on-demand"
    assert "watcher: running here (on-demand, pid" in run_cli("who").stdout
    wait_until(lambda: not watcher_pids(root), 30, what="the quiet watcher to exit")
    assert not watchers.is_running(FileStore(root))
    log = (root / "watcher" / f"{os.uname().nodename}.log").read_text()
    assert "started on demand" in log and "nothing to wake: stopping" in log
    assert "next send, hook or server starts one" in run_cli("who").stdout
    assert oct((root / "watcher" / f"{os.uname().nodename}.log").stat().st_mode)[-3:] == "600"


def test_many_starting_at_once_leave_exactly_one(root: Path, tmp_path: Path) -> None:
    agent, calls = recorder(tmp_path)
    configure(root, {"bob": agent})
    starters = [subprocess.Popen([sys.executable, "-m", "mailslot", "watch", "--started",
                                  "on-demand"]) for _ in range(6)]
    # five find the lock taken and exit (0: not an error); one holds it and runs
    wait_until(lambda: sum(p.poll() is not None for p in starters) == 5, 30,
               what="five to give way")
    assert [p.returncode for p in starters if p.poll() is not None] == [0] * 5
    [winner] = [p.pid for p in starters if p.poll() is None]
    assert watcher_pids(root) == [winner]
    senders = [subprocess.Popen([sys.executable, "-m", "mailslot", "--agent", f"s{n}", "send",
                                 "--to", "bob", "--subject", "s", "--body", "b"])
               for n in range(6)]
    assert [p.wait(30) for p in senders] == [0] * 6
    wait_until(lambda: len(lines(calls)) == 6 and queue_empty(root), 30, what="six wakes")
    assert watcher_pids(root) == [winner]
    assert sorted(lines(calls)) == sorted(set(lines(calls)))  # each message woken once
    for p in starters:
        p.terminate()
        p.wait(10)


def test_sends_at_once_with_no_watcher_start_exactly_one(root: Path, tmp_path: Path) -> None:
    agent, calls = recorder(tmp_path)
    configure(root, {"bob": agent})
    senders = [subprocess.Popen([sys.executable, "-m", "mailslot", "--agent", f"s{n}", "send",
                                 "--to", "bob", "--subject", "s", "--body", "b"])
               for n in range(6)]
    assert [p.wait(30) for p in senders] == [0] * 6
    wait_until(lambda: len(lines(calls)) == 6 and queue_empty(root), 30, what="six wakes")
    wait_until(lambda: len(watcher_pids(root)) == 1, 10, what="the losers to exit")
    log = (root / "watcher" / f"{os.uname().nodename}.log").read_text()
    assert log.count("started on demand") == 1


def test_a_foreground_watch_counts_and_takes_over_from_an_on_demand_one(
        root: Path, tmp_path: Path) -> None:
    agent, calls = recorder(tmp_path)
    configure(root, {"bob": agent})
    send("--to", "bob")
    wait_until(lambda: watchers.record(FileStore(root)), 30, what="the on-demand watcher")
    first = watchers.record(FileStore(root))
    assert first is not None
    out = tmp_path / "fg.log"
    with out.open("w") as f:
        fg = subprocess.Popen([sys.executable, "-m", "mailslot", "watch"], stdout=f,
                              stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: (watchers.record(FileStore(root)) or {}).get("how") == "foreground",
                   30, what="the foreground watcher to take over")
        wait_until(lambda: first["pid"] not in watcher_pids(root), 30,
                   what="the on-demand one to stop")
        m = json.loads(send("--to", "bob", "--json").stdout)["id"]
        wait_until(lambda: m in lines(calls), 30, what="the foreground watcher's wake")
        # no on-demand one beside it (one a send started in the moment before the
        # foreground one held the lock finds it held and exits at once)
        wait_until(lambda: watcher_pids(root) == [fg.pid], 30,
                   what="the foreground watcher alone")
        assert "running here (foreground" in run_cli("doctor").stdout
    finally:
        fg.terminate()
        fg.wait(10)
    assert not watchers.is_running(FileStore(root))


def test_kill_9_mid_wake_the_next_trigger_wakes_once(root: Path, tmp_path: Path) -> None:
    agent, calls = slow_agent(tmp_path)
    configure(root, {"bob": agent})
    m = json.loads(send("--to", "bob", "--json").stdout)["id"]
    wait_until(lambda: len(lines(calls)) == 1, 30, what="the first (slow) wake to start")
    child = int(lines(calls)[0].split()[2])
    [first] = watcher_pids(root)
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{child}"), 10,
               what="the wake program to die with its watcher")
    assert not watchers.is_running(FileStore(root))
    # the next trigger: bob's session starting (a hook)
    hook = subprocess.run([sys.executable, "-m", "mailslot", "--agent", "bob", "hook",
                           "claude", "session-start"], input=fixture("claude-session-start"),
                          capture_output=True, timeout=60, check=True)
    assert b"> b" in hook.stdout  # the mail is shown too
    wait_until(lambda: any(x.startswith("done") for x in lines(calls)) and queue_empty(root),
               30, what="the retried wake")
    assert [x.split()[:2] for x in lines(calls)] == [["start", m], ["start", m], ["done", m]]
    assert [e["event"] for e in events(root) if e["event"] in ("wake_ok", "wake_failed")] \
        == ["wake_failed", "wake_ok"]
    assert json.loads(run_cli("--agent", "bob", "inbox", "--json").stdout)[0]["id"] == m


def test_hooks_with_no_wake_configured_start_nothing(root: Path) -> None:
    configure(root, {"bob": {"wake_on_mail": False}})
    run_cli("--agent", "alice", "send", "--to", "bob", "--subject", "s", "--body", "b")
    subprocess.run([sys.executable, "-m", "mailslot", "--agent", "bob", "hook", "claude",
                    "session-start"], input=fixture("claude-session-start"),
                   capture_output=True, timeout=60, check=True)
    assert not (root / "watcher").exists() and not watcher_pids(root)


def test_hooks_and_servers_with_nothing_queued_start_nothing(root: Path,
                                                             tmp_path: Path) -> None:
    agent, _ = recorder(tmp_path)
    configure(root, {"bob": agent})
    for event in ("session-start", "user-prompt-submit", "stop"):
        subprocess.run([sys.executable, "-m", "mailslot", "--agent", "bob", "hook", "claude",
                        event], input=fixture(f"claude-{event}"), capture_output=True,
                       timeout=60, check=True)
    server = subprocess.run([sys.executable, "-m", "mailslot", "serve", "--agent", "bob"],
                            input=b"", capture_output=True, timeout=60, check=True)
    assert b"Traceback" not in server.stderr
    assert not watcher_pids(root) and not watchers.is_running(FileStore(root))


def test_a_hook_with_wakes_configured_loads_nothing_of_waking(root: Path,
                                                              tmp_path: Path) -> None:
    agent, _ = recorder(tmp_path)
    configure(root, {"bob": agent})
    queue_a_wake(root)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "mailslot", "--agent",
                           "bob", "hook", "claude", "session-start"],
                          input=fixture("claude-session-start"), capture_output=True,
                          timeout=60, check=True)
    loaded = {line.rsplit("|", 1)[1].strip() for line in done.stderr.decode().splitlines()
              if line.startswith("import time:") and "|" in line}
    assert "mailslot.mail.watchers" in loaded
    assert not {m for m in loaded if m.startswith("mailslot.wake")}
    assert not loaded & {"json", "re", "subprocess", "typing", "hashlib", "threading"}
    wait_until(lambda: watchers.is_running(FileStore(root)), 30, what="the watcher it started")


def test_a_send_says_why_a_wake_cannot_happen_and_still_delivers(root: Path,
                                                                 tmp_path: Path) -> None:
    agent, _ = recorder(tmp_path)
    configure(root, {"bob": agent}, watcher={"on_demand": False})
    r = send("--to", "bob")
    assert r.returncode == 0
    assert r.stderr.strip() == ("mailslot: note: wakes cannot happen now: no watcher is "
                                "running and watcher.on_demand is false: wakes wait until "
                                "`mailslot watch` runs")
    assert "watcher.on_demand is false" in run_cli("doctor").stdout
    configure(root, {"bob": agent})
    shutil.rmtree(root / "watcher")
    (root / "watcher").write_text("not a folder")  # the watcher cannot be started
    r = send("--to", "bob")
    assert r.returncode == 0
    assert "wakes cannot happen now: a watcher could not be started" in r.stderr
    inbox = json.loads(run_cli("--agent", "bob", "inbox", "--json").stdout)
    assert len(inbox) == 2 and not watcher_pids(root)


def test_the_log_stays_bounded(tmp_path: Path) -> None:
    base = tmp_path / "w"
    code = f"""
import os, sys
from mailslot.mail.watchers import rotate_log
fd = os.open({str(base) + ".log"!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
os.dup2(fd, 1)
for n in range(50):
    os.write(1, b"x" * 99 + b"\\n")
    rotate_log({str(base)!r}, limit=1000)
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert (tmp_path / "w.log").stat().st_size <= 1100
    assert (tmp_path / "w.log.1").stat().st_size <= 1100


class _Db:
    folder = None
    location = "postgresql://db.example/mail"


def test_a_store_with_no_folder_locks_under_the_state_dir(tmp_path: Path) -> None:
    base = watchers.base_path(_Db(), {"XDG_STATE_HOME": str(tmp_path), "MAILSLOT_HOST": "m1"})
    assert base.startswith(str(tmp_path / "mailslot" / "watchers") + os.sep)
    assert base.endswith("-m1") and "example" not in base  # the address is hashed
    other = watchers.base_path(_Db(), {"XDG_STATE_HOME": str(tmp_path), "MAILSLOT_HOST": "../x"})
    assert os.path.dirname(other) == os.path.dirname(base)  # an odd host name is hashed


def test_a_server_starting_starts_one(root: Path, tmp_path: Path) -> None:
    agent, _ = recorder(tmp_path)
    configure(root, {"bob": agent})
    queue_a_wake(root)
    server = subprocess.Popen([sys.executable, "-m", "mailslot", "serve", "--agent", "bob"],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        wait_until(lambda: watchers.is_running(FileStore(root)), 60,
                   what="the watcher the server started")
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(30)
    assert server.stderr is not None and b"Traceback" not in server.stderr.read()
    server.stderr.close()


def test_the_mcp_result_carries_the_reason(root: Path, tmp_path: Path,
                                           box: Callable[[str], Mailbox]) -> None:
    from mailslot.frontends.mcp import tools

    agent, _ = recorder(tmp_path)
    configure(root, {"bob": agent}, watcher={"on_demand": False})
    result = tools.send_message(lambda: box("alice"), to="bob", subject="s", body="b")
    assert result.structured_content is not None
    assert result.structured_content["notes"] == [
        "wakes cannot happen now: no watcher is running and watcher.on_demand is false: "
        "wakes wait until `mailslot watch` runs"]
    assert Queue(FileStore(root)).agents() == ["bob"]  # queued: a watcher started later wakes it


def test_a_database_store_locks_under_the_state_folder(
        pg_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_cluster.new_database()
    store = open_store(url)
    agent, calls = recorder(tmp_path)
    put_config(store, {"agents": {"bob": agent}})
    monkeypatch.setenv("MAILSLOT_DIR", url)
    try:
        m = json.loads(send("--to", "bob", "--json").stdout)["id"]
        wait_until(lambda: lines(calls) == [m], 60, what="the wake")
        base = watchers.base_path(store)
        assert base.startswith(str(tmp_path / "state" / "mailslot" / "watchers") + os.sep)
        assert watchers.is_running(store) and len(watcher_pids(url)) == 1
        assert "started on demand" in Path(base + ".log").read_text()
        assert url not in " ".join(Path(f"/proc/{watcher_pids(url)[0]}/cmdline")
                                   .read_text().split("\0"))  # the address is not in argv
    finally:
        for pid in watcher_pids(url):
            os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not watcher_pids(url), 30, what="the watcher to stop")
        store.close()


def test_a_hook_that_starts_a_watcher_holds_no_pipe_of_its_host_open(
        root: Path, tmp_path: Path) -> None:
    agent, _ = recorder(tmp_path)
    configure(root, {"bob": agent})
    queue_a_wake(root)
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)  # as a host may hand its hook a descriptor
    try:
        subprocess.run([sys.executable, "-m", "mailslot", "--agent", "bob", "hook", "claude",
                        "session-start"], input=fixture("claude-session-start"),
                       capture_output=True, timeout=60, check=True, pass_fds=(write_end,))
        os.close(write_end)
        wait_until(lambda: watchers.is_running(FileStore(root)), 30, what="the watcher")
        os.set_blocking(read_end, False)
        assert os.read(read_end, 1) == b""  # the end: nobody else holds the write end
    finally:
        os.close(read_end)


def test_a_watcher_whose_mailbox_is_removed_stops(root: Path, tmp_path: Path) -> None:
    agent, calls = recorder(tmp_path)
    configure(root, {"bob": agent}, watcher={"idle_seconds": 600})
    assert send("--to", "bob").returncode == 0
    wait_until(lambda: len(lines(calls)) == 1, 30, what="the wake")
    assert watcher_pids(root)
    shutil.rmtree(root)
    wait_until(lambda: not watcher_pids(root), 30, what="the watcher to notice and stop")


def kill_the_watcher(root: Path) -> None:
    """``kill -9`` the running watcher, and wait until its lock is free."""
    [pid] = wait_until(lambda: watcher_pids(root), 30, what="a watcher")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not watcher_pids(root) and not watchers.is_running(FileStore(root)),
               30, what="the killed watcher's lock to be free")


def test_a_killed_watcher_comes_back_at_the_next_hook_of_any_kind(
        root: Path, tmp_path: Path) -> None:
    agent, calls = recorder(tmp_path)
    configure(root, {"bob": agent})
    first = json.loads(send("--to", "bob", "--json").stdout)["id"]
    wait_until(lambda: lines(calls) == [first], 30, what="the first wake")
    for event in ("stop", "post-tool-use", "session-start"):
        kill_the_watcher(root)
        waiting = queue_a_wake(root)  # queued while none runs: no send starts one
        hook = subprocess.run([sys.executable, "-m", "mailslot", "--agent", "carol", "hook",
                               "claude", event], input=fixture(f"claude-{event}"),
                              capture_output=True, timeout=60, check=True)
        assert hook.stderr == b""
        wait_until(lambda: waiting in lines(calls), 30,  # noqa: B023 (waited for here)
                   what=f"the wake, by a watcher a {event} hook started again")
        assert len(watcher_pids(root)) == 1


class StdioServer:
    """``mailslot serve`` as a host runs it, called with raw JSON-RPC lines."""

    def __init__(self, agent: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mailslot", "--agent", agent,
                                      "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}})
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, object]) -> dict[str, object]:
        self.next_id += 1
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return dict(answer)

    def call(self) -> None:
        self.request("tools/call", {"name": "list_agents", "arguments": {}})

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(30)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def http_server(root: Path, agent: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """``mailslot serve --http`` on a free port: one call (an inbox page) and its stop."""
    from mailslot.access import authority
    from mailslot.access.credentials import read_credential
    from mailslot.frontends.http.client import Remote
    from test_http_process import free_port

    path = authority.register(FileStore(root), agent, path=str(root.parent / "c.cred")).path
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mailslot", "serve", "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    remote = Remote(f"http://127.0.0.1:{port}", read_credential(path).secret, timeout=30)

    def call() -> None:
        remote.get("inbox", limit=1)

    def stop() -> None:
        proc.kill()
        proc.wait(30)

    try:
        wait_until(lambda: _answers(call), 60, what="the HTTP server")
    except BaseException:
        stop()
        raise
    return call, stop


def _answers(call: Callable[[], None]) -> bool:
    from mailslot.core.errors import MailslotError

    try:
        call()
    except MailslotError:
        return False
    return True


@pytest.mark.parametrize("front", ["serve", "serve --http"])
def test_a_running_server_brings_a_killed_watcher_back_at_its_next_call(
        root: Path, tmp_path: Path, front: str) -> None:
    agent, calls = recorder(tmp_path)
    configure(root, {"bob": agent})
    first = queue_a_wake(root)
    if front == "serve":
        server = StdioServer("carol")
        call, stop = server.call, server.close
    else:
        call, stop = http_server(root, "carol")
    try:
        wait_until(lambda: first in lines(calls), 60, what="the wake of the watcher the "
                   "server started at its start")
        kill_the_watcher(root)
        waiting = queue_a_wake(root)

        def called() -> bool:
            call()
            return waiting in lines(calls)

        wait_until(called, 60, what="the wake, by a watcher the server's calls started again")
    finally:
        stop()


def test_a_forged_record_never_gets_another_process_signalled(root: Path) -> None:
    store = FileStore(root)
    victim = subprocess.Popen(["sleep", "300"])
    base = watchers.base_path(store)
    os.makedirs(os.path.dirname(base), mode=0o700, exist_ok=True)
    lock = os.open(base + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as an on-demand watcher holds it
        stat = Path(f"/proc/{victim.pid}/stat").read_text()
        forgeries = [
            {"pid": victim.pid, "how": "on-demand"},  # a record as older watchers wrote it
            {"pid": victim.pid, "how": "on-demand",  # its real start time and argv
             "pid_start": stat.rsplit(")", 1)[1].split()[19],
             "argv_digest": hashlib.sha256(b"sleep\x00300").hexdigest()[:16]},
        ]
        for forged in forgeries:
            Path(base + ".json").write_text(json.dumps(forged))
            watch = subprocess.Popen([sys.executable, "-m", "mailslot", "watch"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            assert watch.stderr is not None
            note = watch.stderr.readline().decode()
            watch.kill()
            watch.wait(30)
            watch.stderr.close()
            assert note.startswith(f"mailslot: note: the watcher record names pid {victim.pid}, "
                                   "but "), note
            assert "no signal was sent; this one shares the queue with it" in note
            assert victim.poll() is None  # the unrelated process lives on
    finally:
        os.close(lock)
        victim.kill()
        victim.wait(30)



def test_what_is_planted_under_the_state_folder_is_named(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path), "MAILSLOT_HOST": "m1"}
    base = watchers.base_path(_Db(), env)
    assert watchers.problems(_Db(), env) == []  # nothing there yet
    os.makedirs(os.path.dirname(base), mode=0o700)
    os.mkfifo(base + ".json", 0o600)
    os.symlink(tmp_path, base + ".log")
    assert watchers.problems(_Db(), env) == [
        f"watcher: {base}.json is not a regular file; mailslot never reads it (remove it)",
        f"watcher: {base}.log is a symlink; mailslot never reads it (remove it)"]
    with pytest.raises(UnsafePath):  # the record is read only as a regular file
        read_file(base + ".json")
    os.rename(os.path.dirname(base), tmp_path / "real")
    os.symlink(tmp_path / "real", os.path.dirname(base))
    assert watchers.problems(_Db(), env) == [
        f"watcher: {os.path.dirname(base)} is a symlink; mailslot does not follow links"]
    with pytest.raises(UnsafePath):
        watchers.is_running(_Db(), env)
