"""The notification hub on a real PostgreSQL server: the watches of one machine share
one LISTEN connection and each still gets its kicks; a hub that dies, refuses, is faked
or is reachable by others loses no mail (docs/security.md, "The notification hub")."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.backends.postgres import pg_hub
from mailslot.core import local_socket
from pgcluster import Cluster
from support import (
    as_nobody,
    break_privacy,
    closed_by_peer,
    endless_lines,
    fake_helper,
    idle_connections,
    play_broken,
    proc_status,
    wait_for,
)

WATCH = """
import sys, threading
from mailslot.backends import open_store
store = open_store(sys.argv[1])
agent, lock = sys.argv[2], threading.Lock()
def kick():
    with lock:  # on a kick the watch looks, and says how much unread mail it found
        unread = len(store.entries(agent, ["unread"])) if agent != "*" else -1
        print(f"kick {unread}", flush=True)
watching = (store.watch_mail(kick) if agent == "*" else store.watch(kick, mail_for=agent))
print("watching", flush=True)
sys.stdin.read()  # until the test closes stdin
watching.close()
"""


class Watch:
    """A watch in a process of its own, and the lines it printed."""

    def __init__(self, url: str, agent: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WATCH, url, agent], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.until(lambda lines: "watching" in lines, "never started watching")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._seen:
                self.lines.append(line.strip())
                self._seen.notify_all()

    def until(self, test: Callable[[list[str]], bool], what: str) -> None:
        with self._seen:
            assert self._seen.wait_for(lambda: test(self.lines) or self.proc.poll() is not None,
                                       60), what
            assert test(self.lines), f"{what}: the watch ended ({self.lines})"

    def kicked_with(self, unread: int) -> None:
        """Wait for a kick after which the watch found ``unread`` messages."""
        self.until(lambda lines: f"kick {unread}" in lines, f"no kick with {unread} unread")

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self._reader.join(30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


class Machine:
    """One machine's environment (its own HOME), the watches started in it."""

    def __init__(self, url: str, runtime: str, home: str) -> None:
        os.makedirs(home, exist_ok=True)
        self.url = url
        self.env = {**os.environ, "XDG_RUNTIME_DIR": runtime, "HOME": home,
                    "MAILSLOT_HUB_IDLE_SECONDS": "120"}
        self.env.pop("MAILSLOT_RELAY", None)
        found = pg_hub.place_of(url, self.env)
        assert found is not None
        self.hub = found
        self.watches: list[Watch] = []

    def watch(self, agent: str) -> Watch:
        self.watches.append(Watch(self.url, agent, self.env))
        return self.watches[-1]

    def hub_pids(self) -> list[int]:
        """This machine's hub processes (by their environment)."""
        return [pid for pid, env in _environs()
                if f"{pg_hub.STORE_VARIABLE}=".encode() in env
                and f"HOME={self.env['HOME']}\0".encode() in env]


def _environs() -> Iterator[tuple[int, bytes]]:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            yield int(pid), Path(f"/proc/{pid}/environ").read_bytes() + b"\0"
        except OSError:
            continue


def listeners(url: str) -> int:
    """The server's LISTEN backends on this database (the last statement of an idle
    connection is shown)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                           "current_database() AND query ILIKE 'LISTEN %' AND pid <> "
                           "pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    return pg_cluster.new_database()


@pytest.fixture
def runtime() -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="ms-")  # short: a socket's path has 108 bytes
    os.chmod(folder, 0o700)
    try:
        yield folder
    finally:
        for pid, env in _environs():  # the hubs this test's watches started
            if f"XDG_RUNTIME_DIR={folder}\0".encode() in env and pid != os.getpid():
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def machine(url: str, runtime: str, tmp_path: Path) -> Iterator[Machine]:
    found = Machine(url, runtime, str(tmp_path / "home-a"))
    try:
        yield found
    finally:
        for watch in found.watches:
            watch.stop()


def send(url: str, to: str) -> None:
    Mailbox(open_store(url), Identity("sender", "--agent")).send(to, "hello", "body", new=True)


def test_three_watches_on_one_machine_share_one_listen_connection(
        machine: Machine) -> None:
    a, b, every = machine.watch("a"), machine.watch("b"), machine.watch("*")
    assert listeners(machine.url) == 1  # the hub's, not one per watch
    assert len(machine.hub_pids()) == 1
    assert oct(os.stat(machine.hub.socket).st_mode & 0o777) == "0o600"
    send(machine.url, "a")
    a.kicked_with(1)
    every.kicked_with(-1)
    send(machine.url, "b")
    b.kicked_with(1)
    assert listeners(machine.url) == 1


def test_a_killed_hub_loses_no_mail_and_a_new_one_takes_over(machine: Machine) -> None:
    a, b = machine.watch("a"), machine.watch("b")
    [first] = machine.hub_pids()
    os.kill(first, signal.SIGKILL)
    send(machine.url, "a")  # while no hub may be listening
    a.kicked_with(1)  # heard, or looked again on subscribing anew
    wait_for(lambda: len(machine.hub_pids()) == 1 and machine.hub_pids() != [first],
               what="a new hub")
    wait_for(lambda: listeners(machine.url) == 1, what="one LISTEN connection again")
    send(machine.url, "b")
    b.kicked_with(1)
    send(machine.url, "a")
    a.kicked_with(2)


def test_another_home_is_another_machine_with_its_own_hub(
        machine: Machine, url: str, runtime: str, tmp_path: Path) -> None:
    other = Machine(url, runtime, str(tmp_path / "home-b"))
    try:
        here, there = machine.watch("a"), other.watch("a")
        assert machine.hub.socket != other.hub.socket
        assert len(machine.hub_pids()) == len(other.hub_pids()) == 1
        assert listeners(url) == 2
        send(url, "a")
        here.kicked_with(1)
        there.kicked_with(1)
    finally:
        for watch in other.watches:
            watch.stop()


@pytest.fixture
def here(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> Machine:
    """The machine's environment in this process too, for watches of the test's own."""
    for name, value in machine.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MAILSLOT_RELAY")
    return machine


def _watch_here(url: str, agent: str) -> tuple[threading.Event, object]:
    kicked = threading.Event()
    store = open_store(url)
    return kicked, store.watch(kicked.set, mail_for=agent)


@pytest.mark.parametrize("fake", ["refuses", "says garbage", "hangs up", "never answers"])
def test_a_hub_that_fails_to_subscribe_means_listening_directly(
        here: Machine, fake: str) -> None:
    listener = fake_helper(here.hub)
    held: list[socket.socket] = []

    player = play_broken(listener, fake, held)
    kicked, watching = _watch_here(here.url, "a")
    try:
        player.join(30)
        assert here.hub_pids() == []  # a socket was there: no hub started beside it
        assert listeners(here.url) == 1  # the watch's own
        send(here.url, "a")
        assert kicked.wait(60)
    finally:
        watching.close()  # type: ignore[attr-defined]
        for conn in held:
            conn.close()
        listener.close()


@pytest.mark.parametrize("break_it", ["socket mode", "folder mode", "socket owner",
                                      "folder owner"])
def test_a_hub_anyone_else_could_reach_or_own_is_not_used(
        here: Machine, break_it: str) -> None:
    if break_it.endswith("owner") and os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    first = here.watch("a")  # starts the hub
    break_privacy(here.hub, break_it)
    kicked, watching = _watch_here(here.url, "a")
    try:
        assert listeners(here.url) == 2  # the hub's, and the new watch's own
        send(here.url, "a")
        assert kicked.wait(60)
        first.kicked_with(1)
    finally:
        watching.close()  # type: ignore[attr-defined]


def _subscribe(where: local_socket.Place, key: str) -> tuple[socket.socket,
                                                               local_socket.Frames]:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(where.socket)
    sock.settimeout(60)
    local_socket.send(sock, {"key": key})
    return sock, local_socket.Frames(sock)


def test_a_subscriber_with_another_key_is_refused(machine: Machine) -> None:
    machine.watch("a")
    sock, frames = _subscribe(machine.hub, machine.hub.key + "x")
    with sock:
        assert "refused" in (frames.next() or {})


@pytest.mark.skipif(os.geteuid() != 0, reason="running as another user needs root")
def test_another_users_process_hears_nothing_from_the_hub(machine: Machine) -> None:
    machine.watch("a")
    hello = json.dumps({"key": machine.hub.key}).encode()
    assert as_nobody(machine.hub, hello) == "b''"  # closed without a word


def test_a_hostile_payload_stays_inside_its_frame(machine: Machine) -> None:
    machine.watch("a")
    sock, frames = _subscribe(machine.hub, machine.hub.key)
    with sock, psycopg.connect(machine.url, autocommit=True) as conn:
        assert frames.next() == {"ready": True}
        hostile = 'mail:x\n{"again": true}\n{"note": "mail:a"}'
        conn.execute("SELECT pg_notify('other', 'mail:a')")  # not the store's channel
        conn.execute("SELECT pg_notify('mailslot', %s)", (hostile,))
        assert frames.next() == {"note": hostile}


@pytest.mark.heavy  # fifty thousand notifications
def test_a_stuck_subscriber_is_dropped_and_blocks_no_one(machine: Machine) -> None:
    a = machine.watch("a")
    stuck, frames = _subscribe(machine.hub, machine.hub.key)
    with stuck, psycopg.connect(machine.url, autocommit=True) as conn:
        assert frames.next() == {"ready": True}
        conn.execute("SELECT pg_notify('mailslot', 'wake:n' || g) "
                     "FROM generate_series(1, 50000) g")  # it reads none of them
        send(machine.url, "a")
        a.kicked_with(1)  # the others are not held up
        stuck.settimeout(60)
        while stuck.recv(1 << 20):  # what fitted in its queue and buffers, then the end
            pass
    send(machine.url, "a")
    a.kicked_with(2)


def test_switched_off_each_watch_listens_by_itself_and_no_hub_starts(
        machine: Machine) -> None:
    machine.env["MAILSLOT_RELAY"] = "0"
    a, b = machine.watch("a"), machine.watch("b")
    assert listeners(machine.url) == 2
    assert machine.hub_pids() == [] and not os.path.exists(machine.hub.socket)
    send(machine.url, "b")
    b.kicked_with(1)
    send(machine.url, "a")
    a.kicked_with(1)


def test_a_hub_without_subscribers_exits_after_its_idle_time(machine: Machine) -> None:
    machine.env["MAILSLOT_HUB_IDLE_SECONDS"] = "1"
    machine.watch("a").stop()
    wait_for(lambda: machine.hub_pids() == [], what="the idle hub to exit")
    assert not os.path.exists(machine.hub.socket) and listeners(machine.url) == 0


def test_endless_lines_are_cut_off_and_the_hub_stays_small(machine: Machine) -> None:
    a = machine.watch("a")
    [hub] = machine.hub_pids()
    before = proc_status(hub, "VmRSS")
    cut = endless_lines(machine.hub.socket, 24, 15)  # 360 MiB no hub should hold
    assert all(cut)  # each closed once past the longest hello (64 KiB)
    grown = proc_status(hub, "VmHWM") - before  # the peak, in KiB
    assert grown < 64 * 1024, f"the hub grew by {grown // 1024} MiB"
    send(machine.url, "a")
    a.kicked_with(1)  # its subscriber still served
    b = machine.watch("b")
    send(machine.url, "b")
    b.kicked_with(1)
    assert machine.hub_pids() == [hub] and listeners(machine.url) == 1


def test_idle_connections_cost_no_thread_and_are_closed(machine: Machine) -> None:
    a = machine.watch("a")
    [hub] = machine.hub_pids()
    before = proc_status(hub, "Threads")
    idle = idle_connections(machine.hub.socket, 500)
    try:
        most = before
        for _ in range(100):  # while the hub takes them
            most = max(most, proc_status(hub, "Threads"))
        assert most < before + 10, f"{most - before} threads for 500 idle connections"
        assert all(closed_by_peer(sock) for sock in idle)  # too many, or silent too long
        b = machine.watch("b")
        send(machine.url, "b")
        b.kicked_with(1)
        send(machine.url, "a")
        a.kicked_with(1)
        assert listeners(machine.url) == 1  # both through the hub
    finally:
        for sock in idle:
            sock.close()
