"""The database restarting or down mid-send: a send is never lost nor doubled,
and a failed one says in one line whether it was sent; stores, watches and watchers
reconnect by themselves. The server is stopped and started for real (its own throwaway
cluster, so the other tests' server is left alone)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from hookkit import fixture
from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from pgcluster import Cluster, cluster
from support import put_config, run_cli
from wake_helpers import calls, fake_host, wait_until


@pytest.fixture(scope="module")
def server() -> Iterator[Cluster]:
    with cluster() as running:
        yield running


@pytest.fixture
def url(server: Cluster) -> Iterator[str]:
    made = server.new_database()
    open_store(made).init()
    yield made
    if not _up(made):  # a test that failed while the server was stopped
        server.start()


def _up(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


def env_of(url: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "MAILSLOT_DIR"},
            "MAILSLOT_STORE": url}


def send(url: str, subject: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mailslot", "--agent", "claude", "send", "--to", "gemini",
         "--subject", subject, "--body", "x"], env=env_of(url), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def copies(url: str) -> list[str]:
    return [open_store(url).load("gemini", i)[0].subject
            for i, _ in open_store(url).entries("gemini", ["unread"])]


def waiting_backend(url: str, condition: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        return bool(conn.execute(f"SELECT FROM pg_stat_activity WHERE {condition}"
                                 ).fetchall())


def test_a_send_after_the_server_restarted_goes_through_once(
        url: str, server: Cluster) -> None:
    """A long-running process's connection died with the server: its next send makes
    a new one, without an error and without a second copy."""
    box = Mailbox(open_store(url), Identity("claude", "--agent"))
    box.send("gemini", "before", "x")
    server.stop()
    server.start()
    box.send("gemini", "after", "x")
    assert sorted(copies(url)) == ["after", "before"]


def test_a_send_while_the_database_is_down_is_one_line_saying_nothing_was_written(
        url: str, server: Cluster) -> None:
    server.stop()
    failed = run_cli("--agent", "claude", "send", "--to", "gemini", "--subject", "s",
                     "--body", "x", env=env_of(url))
    server.start()
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.count("\n") == 1 and "nothing was written" in failed.stderr
    assert copies(url) == []
    again = run_cli("--agent", "claude", "send", "--to", "gemini", "--subject", "s",
                    "--body", "x", env=env_of(url))
    assert again.returncode == 0 and copies(url) == ["s"]


@pytest.mark.heavy  # it waits out the send's wait for the server
def test_a_send_cut_off_mid_transaction_says_nothing_was_sent(
        url: str, server: Cluster) -> None:
    """The server stops while the send's transaction waits on a lock (its mail rows
    written, the rest not): rolled back, and the sender is told so."""
    holder = psycopg.connect(url)
    try:
        holder.execute("LOCK TABLE search IN ACCESS EXCLUSIVE MODE")
        sending = send(url, "cut")
        wait_until(lambda: waiting_backend(url, "wait_event_type = 'Lock' AND query LIKE "
                                                "'INSERT INTO search%'"),
                   60, what="the send to wait mid-transaction")
        server.stop()
    finally:
        holder.close()  # its transaction ended with the server
    _, err = sending.communicate(timeout=60)
    server.start()
    assert sending.returncode == 1
    assert err.count("\n") == 1 and "nothing was sent (it never committed)" in err
    assert copies(url) == []


@pytest.mark.heavy  # it waits out the send's wait for the server
def test_a_send_cut_off_during_its_commit_says_it_cannot_know_yet(
        url: str, server: Cluster) -> None:
    """The server stops while the send commits (a deferred trigger holds the commit):
    the sender cannot know whether it landed, and says so rather than guess."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS "
                     "$$ BEGIN PERFORM pg_sleep(60); RETURN NULL; END $$")
        conn.execute("CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON mail DEFERRABLE "
                     "INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow()")
    sending = send(url, "commit")
    wait_until(lambda: waiting_backend(url, "wait_event = 'PgSleep'"), 60,
               what="the send to be in its commit")
    server.stop()
    _, err = sending.communicate(timeout=60)
    server.start()
    assert sending.returncode == 1 and err.count("\n") == 1
    assert "cannot be known until the database is back" in err
    assert "mailslot status ID" in err
    assert copies(url) == []  # it had not landed: `status` would say so now


def test_a_watch_hears_again_after_the_server_restarted(url: str, server: Cluster) -> None:
    store = open_store(url)
    kicked = threading.Event()
    watching = store.watch(kicked.set, mail_for="gemini")
    try:
        server.stop()
        kicked.clear()
        server.start()
        assert kicked.wait(60)  # reconnected, and looks again
        kicked.clear()
        Mailbox(open_store(url), Identity("claude", "--agent")).send("gemini", "s", "x")
        assert kicked.wait(60)
    finally:
        watching.close()


@pytest.mark.heavy
def test_a_watcher_wakes_again_after_the_server_restarted(
        url: str, server: Cluster, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_host(bin_dir, "notify")
    put_config(open_store(url), {"owner": "sarah", "agents": {"gemini": {
        "wake_on_mail": True, "wake_method": "command",
        "command": [str(bin_dir / "notify"), "{id}"]}}})
    log = tmp_path / "watch.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mailslot", "watch"],
                                env=env_of(url), stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "watching" in log.read_text(), 60, what="the watcher")
        server.stop()
        server.start()
        sent = Mailbox(open_store(url), Identity("claude", "--agent")).send(
            "gemini", "s", "x", wake=True)
        wait_until(lambda: calls(record), 60, what="the wake after the restart")
    finally:
        proc.terminate()
        proc.wait(10)
    assert [c["argv"] for c in calls(record)] == [[sent.id]]


@pytest.mark.parametrize("how", ["refused", "never answers"])
def test_a_session_hook_prints_nothing_when_the_database_is_unreachable(
        how: str, tmp_path: Path) -> None:
    """A hook never fails a session: a database that refuses, or that takes the
    connection and never says a word (a stuck server, a half-open network), ends the
    hook silently with exit 0 (its time bound, hooks/hook_entry.py, is measured in
    bench/bench_pg_hook.py)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        if how == "never answers":
            silent.listen(8)  # the kernel accepts; nobody ever speaks
        port = silent.getsockname()[1]
        env = {**env_of(f"postgresql://gemini@127.0.0.1:{port}/mail"),
               "HOME": str(tmp_path)}
        result = run_cli("hook", "claude", "session-start", "--agent", "gemini",
                         stdin=fixture("claude-session-start"), env=env)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.count("\n") <= 1
