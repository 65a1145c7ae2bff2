"""The hook relay on a real PostgreSQL server: the same output as the direct path, for
every host's hook shape; and every way the relay can fail or be faked ends in the hook
answering directly (docs/security.md, "The hook relay")."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookkit import FIXTURES
from mailslot import Mailbox
from mailslot import host_registry as hosts
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.frontends.hooks import hook_entry, relay_client
from mailslot.frontends.hooks import relay as relay_process
from mailslot.service.delivery import MIDTURN, PROMPT, START
from pgcluster import Cluster
from support import (
    as_nobody,
    break_privacy,
    closed_by_peer,
    fake_helper,
    idle_connections,
    play_broken,
    proc_status,
)

HOOK = [sys.executable, "-m", "mailslot", "hook", "claude", "session-start",
        "--agent", "gemini"]


class Running:
    """A relay process and the environment its hooks run with."""

    def __init__(self, env: dict[str, str], relay: relay_client.Relay) -> None:
        self.env, self.relay = env, relay
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mailslot.frontends.hooks.relay"],
                                     env={**self.env, "MAILSLOT_RELAY_STORE":
                                          self.env["MAILSLOT_STORE"]})
        deadline = time.monotonic() + 60
        while not _listening(self.relay.socket):
            assert self.proc.poll() is None, "the relay ended"
            assert time.monotonic() < deadline, "the relay never listened"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


def _listening(path: str) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    url = pg_cluster.new_database()
    Mailbox(open_store(url), Identity("claude", "--agent")).send("gemini", "over", "the wire")
    return url


@pytest.fixture
def running(url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Running]:
    runtime = tempfile.mkdtemp(prefix="ms-")  # short: a socket's path has 108 bytes
    os.chmod(runtime, 0o700)
    env = {**os.environ, "MAILSLOT_STORE": url, "XDG_RUNTIME_DIR": runtime,
           "MAILSLOT_RELAY_IDLE_SECONDS": "120"}
    env.pop("MAILSLOT_RELAY", None)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MAILSLOT_RELAY")
    relay = relay_client.wanted(url, env)
    assert relay is not None
    found = Running(env, relay)
    try:
        yield found
    finally:
        found.stop()
        for proc in _relays_of(relay):
            os.kill(proc, signal.SIGKILL)
        shutil.rmtree(runtime, ignore_errors=True)


def _relays_of(relay: relay_client.Relay) -> list[int]:
    """Relays a hook started for this test (found by their environment)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if b"MAILSLOT_RELAY_STORE=" in environ and relay.folder.encode() in environ:
            pids.append(int(pid))
    return pids


def _no_driver(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` in which the direct path cannot work (``import psycopg`` fails), so an
    answer proves the relay gave it; the relay's key does not depend on it."""
    fake = tmp_path / "nodriver" / "psycopg"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no driver in this test')\n")
    return {**env, "PYTHONPATH": str(fake.parent)}


def _hook(env: dict[str, str], stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    data = stdin if stdin is not None else (FIXTURES / "claude-session-start.json").read_bytes()
    proc = subprocess.run(HOOK, input=data, capture_output=True, env=env, timeout=60,
                          check=False)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(),
                                       proc.stderr.decode())


def _shapes() -> list[tuple[str, str]]:
    """Every host's session-start, prompt and post-tool events."""
    found = []
    for host in hosts.every():
        for event, moment in host.events.items():
            if moment in (START, PROMPT, MIDTURN) and event != host.wake_hook:
                found.append((host.name, event))
    return found


def _in_process(host: str, event: str, env: dict[str, str], session: str) -> str:
    payload = {field: session for field in hosts.host(host).session_fields}
    payload["hook_event_name"] = event
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode()))
    out = io.StringIO()
    problem = hook_entry._run(host, hosts.host(host), event, "gemini", None, env, stdin, out)
    assert problem is None, problem
    return out.getvalue()


def test_the_relay_answers_every_hosts_hooks_byte_for_byte_as_the_direct_path(
        running: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    running.start()
    direct_env = {**running.env, "MAILSLOT_RELAY": "0"}
    pairs = []
    for host, event in _shapes():
        session = f"s-{host}-{event}"
        direct = _in_process(host, event, direct_env, session + "-direct")
        with monkeypatch.context() as m:  # the direct path is not there to fall back to
            m.setattr(hook_entry, "answer", None)
            relayed = _in_process(host, event, running.env, session + "-relay")
        pairs.append((host, event, direct, relayed))
    assert [(h, e) for h, e, d, r in pairs if d != r] == []
    assert all("over" in d for h, e, d, r in pairs if hosts.host(h).events[e] == START)


def test_a_hook_starts_a_relay_and_the_next_hook_uses_it_without_the_driver(
        running: Running, tmp_path: Path) -> None:
    first = _hook(running.env)  # no relay: answered directly, one started
    assert first.returncode == 0 and "over" in first.stdout, first.stderr
    deadline = time.monotonic() + 60
    while not _listening(running.relay.socket):
        assert time.monotonic() < deadline, "no relay was started"
        time.sleep(0.05)
    assert oct(os.stat(running.relay.socket).st_mode & 0o777) == "0o600"
    assert oct(os.stat(running.relay.folder).st_mode & 0o777) == "0o700"
    later = _hook(_no_driver(tmp_path, running.env))
    assert (later.returncode, later.stderr) == (0, "")
    assert "1 message was shown earlier" in later.stdout  # the same session, told once


def test_a_dead_relay_or_its_stale_socket_means_the_direct_path_and_a_new_relay(
        running: Running) -> None:
    running.start()
    assert running.proc is not None
    running.proc.kill()  # its socket stays behind
    running.proc.wait(30)
    assert os.path.exists(running.relay.socket)
    shown = _hook(running.env)
    assert shown.returncode == 0 and "over" in shown.stdout, shown.stderr
    deadline = time.monotonic() + 60
    while not _listening(running.relay.socket):  # the hook started a new one
        assert time.monotonic() < deadline, "no relay was started again"
        time.sleep(0.05)


@pytest.mark.parametrize("break_it", ["socket mode", "folder mode", "socket owner",
                                      "folder owner"])
def test_a_relay_socket_anyone_else_could_reach_or_own_is_not_used(
        running: Running, tmp_path: Path, break_it: str) -> None:
    if break_it.endswith("owner") and os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    running.start()
    break_privacy(running.relay, break_it)
    refused = _hook(_no_driver(tmp_path, running.env))  # not relayed: the direct path
    assert refused.returncode == 0 and refused.stdout == ""
    assert "psycopg driver" in refused.stderr
    assert "over" in _hook(running.env).stdout  # and with the driver it answers itself


@pytest.mark.skipif(os.geteuid() != 0, reason="running as another user needs root")
def test_another_users_process_gets_nothing_from_the_relay(running: Running) -> None:
    running.start()
    assert as_nobody(running.relay, b"{}") == "b''"  # closed without a word


def test_a_request_with_another_key_is_refused(running: Running) -> None:
    running.start()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(running.relay.socket)
        sock.settimeout(30)
        relay_client.send(sock, {"key": running.relay.key + "x", "host": "claude"})
        assert "refused" in (relay_client.Frames(sock).next() or {})


@pytest.mark.parametrize("fake", ["hangs up", "says garbage", "never answers",
                                  "dies after reading"])
def test_a_relay_that_fails_before_answering_leaves_the_answer_to_the_hook(
        running: Running, fake: str) -> None:
    """A listener of our own at the relay's socket plays the broken relay."""
    relay = running.relay
    listener = fake_helper(relay)
    held: list[socket.socket] = []

    player = play_broken(listener, fake, held)
    try:
        started = time.monotonic()
        shown = _hook(running.env)
        assert shown.returncode == 0 and "over" in shown.stdout, shown.stderr
        assert shown.stdout.count("[mailslot] Messages") == 1  # printed once
        if fake == "never answers":
            assert time.monotonic() - started >= relay_client.RELAY_SECONDS
    finally:
        player.join(30)
        for conn in held:
            conn.close()
        listener.close()


def test_a_relay_killed_after_printing_prints_nothing_more_and_loses_nothing(
        running: Running, tmp_path: Path) -> None:
    """The relay dies between sending the output and recording it: the hook's output
    stands alone (no second answer), and the mail is shown again, not lost."""
    relay = running.relay
    listener = fake_helper(relay)

    def play() -> None:
        conn, _ = listener.accept()
        conn.recv(1 << 20)
        relay_client.send(conn, {"out": '{"said": "once"}'})
        conn.close()

    player = threading.Thread(target=play, daemon=True)
    player.start()
    try:
        shown = _hook(running.env)
    finally:
        player.join(30)
        listener.close()
    assert (shown.returncode, shown.stdout) == (0, '{"said": "once"}')
    os.unlink(relay.socket)
    again = _hook({**running.env, "MAILSLOT_RELAY": "0"})
    assert "over" in again.stdout  # nothing was recorded as shown


def test_two_hooks_at_once_are_both_answered_by_the_relay(
        running: Running, tmp_path: Path) -> None:
    running.start()
    env = _no_driver(tmp_path, running.env)
    payloads = [json.dumps({"session_id": f"both-{n}", "hook_event_name": "SessionStart",
                            "source": "startup"}).encode() for n in range(6)]
    procs = [subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env) for _ in payloads]
    outs = [proc.communicate(payload, timeout=60)
            for proc, payload in zip(procs, payloads, strict=True)]
    assert all(b"over" in out and err == b"" for out, err in outs), outs


def test_the_hook_through_the_relay_never_imports_the_driver(running: Running) -> None:
    running.start()
    probe = ("import sys\nfrom mailslot.frontends.hooks.hook_entry import run_hook\n"
             "run_hook('claude', 'session-start', agent='gemini')\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'psycopg'), "
             "file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          input=(FIXTURES / "claude-session-start.json").read_text(),
                          env=running.env, timeout=60, check=False)
    assert "over" in done.stdout and done.stderr.strip() == "[]", done.stderr


def test_idle_connections_cost_no_thread_and_hooks_are_still_answered(
        running: Running, tmp_path: Path) -> None:
    running.start()
    assert running.proc is not None
    before = proc_status(running.proc.pid, "Threads")
    idle = idle_connections(running.relay.socket, 500)
    try:
        most = before
        for _ in range(100):  # while the relay takes them
            most = max(most, proc_status(running.proc.pid, "Threads"))
        assert most < before + 10, f"{most - before} threads for 500 idle connections"
        # each newer one took the place of the oldest, the last few wait for their time
        assert all(closed_by_peer(sock) for sock in idle[:-relay_process.MAX_CONNECTIONS])
        done = _hook(_no_driver(tmp_path, running.env))  # only the relay can answer it
        assert "over" in done.stdout and done.stderr == "", done
    finally:
        for sock in idle:
            sock.close()
