"""Two "machines" sharing one PostgreSQL store: each a set of processes with its own
HOME and its own ``mailslot watch``; mail sent on one wakes agents through the other,
by LISTEN/NOTIFY, and a wake is claimed in the database, so it runs once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.mail.presence import Beacon
from mailslot.wake.claims import Queue, notifier_queue
from pgcluster import Cluster
from support import put_config
from wake_helpers import calls, fake_host, wait_until


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    return pg_cluster.new_database()


def machine(tmp_path: Path, name: str, url: str) -> dict[str, str]:
    """The environment of one machine: its own HOME and host name, the shared database."""
    home = tmp_path / name
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_DIR"}
    return {**env, "HOME": str(home), "MAILSLOT_STORE": url, "MAILSLOT_HOST": name}


@contextmanager
def watcher(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mailslot", "watch"], env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "watching" in log.read_text(), 60, what="the watcher to start")
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)


def configure(url: str, bin_dir: Path, agents: list[str], **more: str) -> None:
    command = {"wake_on_mail": True, "wake_method": "command",
               "command": [str(bin_dir / "notify"), "{id}"], **more}
    put_config(open_store(url), {"owner": "sarah", "agents": dict.fromkeys(agents, command)})


@contextmanager
def hanging_notify(bin_dir: Path) -> Iterator[tuple[Path, Path]]:
    """A ``notify`` program whose first run hangs (a host stuck mid-wake): its record
    file and the file naming the hung process, which is killed at the end."""
    record = fake_host(bin_dir, "notify", hang_first=True)
    hung = Path(f"{record}.hung")
    try:
        yield record, hung
    finally:
        pid = int(hung.read_text() or 0) if hung.exists() else 0
        if pid:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


RETRIED_ONCE = [("wake_attempt", 1), ("wake_failed", 1), ("wake_attempt", 2), ("wake_ok", 2)]


def wake_events(url: str) -> list[dict[str, Any]]:
    return [e for e in open_store(url).events() if str(e.get("event")).startswith("wake_")
            and e["event"] != "wake_queued"]


def test_send_on_one_machine_wakes_through_the_other(
        url: str, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_host(bin_dir, "notify")
    configure(url, bin_dir, ["gemini"])
    with watcher(machine(tmp_path, "b", url), tmp_path / "b.log"):
        assert "PostgreSQL notifications" in (tmp_path / "b.log").read_text()
        sent = subprocess.run(
            [sys.executable, "-m", "mailslot", "--agent", "claude", "send", "--to", "gemini",
             "--subject", "s", "--body", "x", "--wake", "--json"],
            env=machine(tmp_path, "a", url), capture_output=True, check=True)
        assert sent.returncode == 0
        wait_until(lambda: calls(record), 60, what="the wake on the other machine")
        wait_until(lambda: not Queue(open_store(url)).agents(), 60, what="the queue to empty")
    assert len(calls(record)) == 1


def test_two_machines_wake_each_message_once(
        url: str, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_host(bin_dir, "notify")
    agents = ["gemini", "codex", "cursor"]
    configure(url, bin_dir, agents)
    box = Mailbox(open_store(url), Identity("claude", "--agent"))
    with watcher(machine(tmp_path, "a", url), tmp_path / "a.log"), \
            watcher(machine(tmp_path, "b", url), tmp_path / "b.log"):
        sent = [box.send(agents[n % 3], f"m{n}", "x", wake=True).id for n in range(30)]
        wait_until(lambda: len(calls(record)) >= 30 and not Queue(open_store(url)).agents(),
                   90, what="every wake")
    assert sorted(c["argv"][0] for c in calls(record)) == sorted(sent)
    assert sum(e["event"] == "wake_ok" for e in wake_events(url)) == 30


def test_a_watcher_killed_mid_wake_leaves_it_to_the_other_machine_once(
        url: str, bin_dir: Path, tmp_path: Path) -> None:
    configure(url, bin_dir, ["gemini"])
    box = Mailbox(open_store(url), Identity("claude", "--agent"))
    with hanging_notify(bin_dir) as (record, hung):
        with watcher(machine(tmp_path, "a", url), tmp_path / "a.log") as first:
            m = box.send("gemini", "s", "x", wake=True)
            wait_until(hung.exists, 60, what="the first wake to hang")
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        with watcher(machine(tmp_path, "b", url), tmp_path / "b.log"):
            wait_until(lambda: len(calls(record)) == 2 and not Queue(open_store(url)).agents(),
                       60, what="the other machine to finish the wake")
    assert [c["argv"] for c in calls(record)] == [[m.id], [m.id]]
    assert [(e["event"], e["attempt"]) for e in wake_events(url)] == RETRIED_ONCE


def test_an_agent_is_woken_only_on_its_host_even_when_that_watcher_dies(
        url: str, bin_dir: Path, tmp_path: Path) -> None:
    configure(url, bin_dir, ["gemini"], host="b")
    box = Mailbox(open_store(url), Identity("claude", "--agent"))
    a, b = machine(tmp_path, "a", url), machine(tmp_path, "b", url)
    with hanging_notify(bin_dir) as (record, hung), watcher(a, tmp_path / "a.log"):
        with watcher(b, tmp_path / "b.log") as on_b:
            m = box.send("gemini", "s", "x", wake=True)
            wait_until(hung.exists, 60, what="the wake on b to hang")
            on_b.send_signal(signal.SIGKILL)
            on_b.wait(10)
        with watcher(b, tmp_path / "b2.log"):  # b restarted: it finishes its wake
            wait_until(lambda: len(calls(record)) == 2 and not Queue(open_store(url)).agents(),
                       60, what="the restarted b to finish the wake")
    assert [(c["argv"], c["env"]["HOME"]) for c in calls(record)] == [([m.id], b["HOME"])] * 2
    assert "woke" not in (tmp_path / "a.log").read_text()  # a was told, and left it alone
    assert [(e["event"], e["attempt"]) for e in wake_events(url)] == RETRIED_ONCE


def test_a_notifier_and_a_wake_for_one_message_each_run_once_across_machines(
        url: str, bin_dir: Path, tmp_path: Path) -> None:
    """On PostgreSQL, the notifier's queue is apart from the wake queue (its
    own rows, claims and lock), and the other machine's watcher hears of both."""
    woken, told = fake_host(bin_dir, "notify"), fake_host(bin_dir, "tell-me")
    configure(url, bin_dir, ["gemini"])
    store = open_store(url)
    store.update_config(lambda c: c["agents"]["gemini"].update(notify=[
        {"kind": "command", "command": [str(bin_dir / "tell-me"), "{id}"]}]) is None)
    with watcher(machine(tmp_path, "b", url), tmp_path / "b.log"):
        m = Mailbox(store, Identity("claude", "--agent")).send("gemini", "s", "x", wake=True)
        wait_until(lambda: calls(woken) and calls(told) and not Queue(store).agents()
                   and not notifier_queue(store, 0).agents(), 60,
                   what="the wake and the notifier on the other machine")
    assert [c["argv"] for c in calls(woken)] == [[m.id]]
    assert [c["argv"] for c in calls(told)] == [[m.id]]


def test_an_agent_without_host_is_woken_where_its_presence_was_last_seen(
        url: str, bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``host`` in the config; the agent's server last ran on machine b, so
    only b's watcher wakes it, while a's watcher runs beside it."""
    record = fake_host(bin_dir, "notify")
    configure(url, bin_dir, ["gemini"])
    store = open_store(url)
    monkeypatch.setenv("MAILSLOT_HOST", "b")  # gemini's MCP server runs on b
    Beacon(store, "gemini").announce()
    a, b = machine(tmp_path, "a", url), machine(tmp_path, "b", url)
    with watcher(a, tmp_path / "a.log"), watcher(b, tmp_path / "b.log"):
        box = Mailbox(store, Identity("claude", "--agent"))
        sent = [box.send("gemini", f"m{n}", "x", wake=True).id for n in range(3)]
        wait_until(lambda: len(calls(record)) >= 3 and not Queue(store).agents(), 60,
                   what="the wakes on b")
    assert sorted(c["argv"][0] for c in calls(record)) == sorted(sent)
    assert {c["env"]["HOME"] for c in calls(record)} == {b["HOME"]}
    assert "woke" not in (tmp_path / "a.log").read_text()
