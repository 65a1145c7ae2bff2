"""What a woken program and the on-demand watcher inherit: real watcher processes.

A woken program gets what its host needs and the woken agent's own identity, nothing of
the watcher's or the sender's; the on-demand watcher is told its store unambiguously
(a folder in argv, a database address, password and all, in its environment only); a
send from a sandbox (another network namespace) starts no watcher there; an inherited
descriptor above a low limit does not stop the start, nor stay open in the watcher.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore
from mailslot import host_registry as hosts
from mailslot.backends import open_store
from mailslot.mail import watchers
from mailslot.wake.claims import Queue
from pgcluster import Cluster
from support import put_config, run_cli
from wake_helpers import configure, wait_until

WOKEN = """#!{python}
# a woken program: records its environment and network, then sends as whoever it is
import json, os, subprocess, sys
record = {{"id": sys.argv[1], "env": dict(os.environ),
          "net": os.readlink("/proc/self/ns/net")}}
if {sends!r}:
    done = subprocess.run([{python!r}, "-m", "mailslot", "send", "--to", "carol",
                           "--subject", "from the woken", "--body", "hi"],
                          capture_output=True, text=True)
    record["send"] = [done.returncode, done.stderr]
fd = os.open({calls!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
os.write(fd, (json.dumps(record) + "\\n").encode())
os.close(fd)
"""

SECRETS = {"MAILSLOT_SECRET": "sender-bearer-secret", "MAILSLOT_PASSPHRASE": "sender-phrase",
           "MAILSLOT_AGENT": "claude", "MAILSLOT_PEER_OF": "claude",
           "SOME_OTHER_TOKEN": "nothing-a-host-needs"}


@pytest.fixture(autouse=True)
def on_demand(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Watchers may start here; every one this test started is ended afterwards."""
    monkeypatch.delenv(watchers.OFF_SWITCH)
    yield
    for pid in _watch_processes():
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _watch_processes() -> list[int]:
    """This test's ``mailslot watch`` processes: their HOME is its own."""
    home = f"HOME={os.environ['HOME']}".encode()
    found = []
    for entry in os.listdir("/proc"):
        with suppress(OSError):
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            if entry.isdigit() and b"watch" in argv and home in env:
                found.append(int(entry))
    return found


def woken(tmp_path: Path, *, sends: bool = False) -> tuple[dict[str, Any], Path]:
    """bob's wake: a program recording what it was given (and, ``sends``, who it is)."""
    calls = tmp_path / "woken.jsonl"
    script = tmp_path / "woken"
    script.write_text(WOKEN.format(python=sys.executable, calls=str(calls), sends=sends))
    script.chmod(0o755)
    return {"wake_on_mail": True, "wake_method": "command",
            "command": [str(script), "{id}"]}, calls


def runs(calls: Path) -> list[dict[str, Any]]:
    text = calls.read_text() if calls.exists() else ""
    return [json.loads(line) for line in text.rpartition("\n")[0].splitlines()]


def markers() -> set[str]:
    """Every host's markers, as the registry declares them."""
    return {name for host in hosts.every() for name in host.markers}


def send(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("--agent", "alice", "send", "--subject", "s", "--body", "b", "--json",
                   *argv, env=env)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)


# A woken program's environment --------------------------------------------------------
def test_a_program_woken_by_a_watcher_with_an_identity_has_only_its_own(
        root: Path, tmp_path: Path) -> None:
    agent, calls = woken(tmp_path, sends=True)
    configure(root, {"bob": agent}, watcher={"pass_env": ["MY_PROVIDER_KEY"]})
    assert run_cli("agent", "add", "claude", "--yes").returncode == 0
    claude = tmp_path / "home" / ".config" / "mailslot" / "credentials" / "claude.json"
    env = {**os.environ, **SECRETS, "MAILSLOT_CREDENTIAL": str(claude),
           **dict.fromkeys(markers(), "1"),
           "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "MY_PROVIDER_KEY": "chosen"}
    watcher = subprocess.Popen([sys.executable, "-m", "mailslot", "watch"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: watchers.is_running(FileStore(root)), 60, what="the watcher")
        message = json.loads(send("--to", "bob").stdout)["id"]
        [run] = wait_until(lambda: runs(calls), 60, what="bob's wake")
    finally:
        _stop(watcher)
    given = run["env"]
    assert run["id"] == message
    assert given["MAILSLOT_AGENT"] == "bob" and given["MAILSLOT_DIR"] == str(root)
    leaked = set(given) & ({*SECRETS, "MAILSLOT_CREDENTIAL", *markers()} - {"MAILSLOT_AGENT"})
    assert not leaked and "nothing-a-host-needs" not in json.dumps(given)
    assert given["PATH"] == os.environ["PATH"] and given["HOME"] == os.environ["HOME"]
    assert given["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/"  # a host's own setting
    assert given["MY_PROVIDER_KEY"] == "chosen"  # named in watcher.pass_env
    assert run["send"][0] == 0, run["send"]
    [mail] = json.loads(run_cli("--agent", "carol", "inbox", "--json").stdout)
    assert mail["from"] == "bob"  # the woken program speaks as bob, not as the watcher


def test_a_program_woken_by_an_on_demand_watcher_has_none_of_the_senders_secrets(
        root: Path, tmp_path: Path) -> None:
    agent, calls = woken(tmp_path)
    configure(root, {"bob": agent})
    env = {**os.environ, **SECRETS, **dict.fromkeys(markers(), "1")}
    del env["MAILSLOT_AGENT"], env["MAILSLOT_PEER_OF"]  # the sender is alice (--agent)
    assert send("--to", "bob", env=env).returncode == 0
    [run] = wait_until(lambda: runs(calls), 60, what="bob's wake")
    assert run["env"]["MAILSLOT_AGENT"] == "bob"
    assert not set(run["env"]) & ({*SECRETS, *markers()} - {"MAILSLOT_AGENT"})
    watcher = watchers.record(FileStore(root))
    assert watcher is not None and isinstance(watcher["pid"], int)
    own = Path(f"/proc/{watcher['pid']}/environ").read_bytes().split(b"\0")
    assert not [v for v in own if v.startswith((b"MAILSLOT_SECRET=", b"MAILSLOT_PASSPHRASE="))]


def test_a_malformed_pass_env_fails_the_wake_naming_the_field(
        root: Path, tmp_path: Path) -> None:
    agent, calls = woken(tmp_path)
    configure(root, {"bob": agent}, watcher={"pass_env": ["MAILSLOT_CREDENTIAL"]})
    assert send("--to", "bob").returncode == 0
    wait_until(lambda: "watcher.pass_env" in (root / "log" / "events.jsonl").read_text(), 60,
               what="the failed wake")
    assert not runs(calls)
    checked = run_cli("watch", "--validate")
    assert checked.returncode == 1
    assert "problem: config.json: watcher.pass_env holds MAILSLOT_CREDENTIAL" in checked.stdout


# The store the on-demand watcher opens --------------------------------------------------
def test_a_sender_whose_environment_names_another_store_still_gets_bob_woken(
        root: Path, tmp_path: Path) -> None:
    agent, calls = woken(tmp_path)
    configure(root, {"bob": agent})
    elsewhere = tmp_path / "elsewhere"
    assert run_cli("--dir", str(elsewhere), "init").returncode == 0
    env = {**os.environ, "MAILSLOT_STORE": str(elsewhere)}
    sent = run_cli("--dir", str(root), "--agent", "alice", "send", "--to", "bob",
                   "--subject", "s", "--body", "b", "--json", env=env)
    assert sent.returncode == 0 and sent.stderr == ""
    [run] = wait_until(lambda: runs(calls), 60, what="bob's wake")
    assert run["id"] == json.loads(sent.stdout)["id"]
    assert watchers.is_running(FileStore(root)) and not watchers.is_running(FileStore(elsewhere))


def _password_role(cluster: Cluster, name: str, password: str) -> None:
    """A role that must give ``password`` over TCP on loopback (scram-sha-256)."""
    cluster.admin(f"CREATE ROLE {name} LOGIN SUPERUSER PASSWORD '{password}'")
    import psycopg

    with psycopg.connect(cluster.url("postgres"), autocommit=True) as conn:
        row = conn.execute("SHOW hba_file").fetchone()
        assert row is not None
        hba = Path(row[0])
        hba.write_text(f"host all {name} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        conn.execute("SELECT pg_reload_conf()")


def test_a_watcher_for_a_url_holding_a_password_connects_and_wakes(
        pg_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _password_role(pg_cluster, "pwadmin", "s3cret-pw")
    plain = pg_cluster.new_database()
    url = plain.replace("postgres@", "pwadmin:s3cret-pw@")
    with pytest.raises(Exception, match="password"):  # the role really needs it
        open_store(plain.replace("postgres@", "pwadmin@")).load_config()
    store = open_store(url)
    agent, calls = woken(tmp_path)
    put_config(store, {"agents": {"bob": agent}})
    monkeypatch.setenv("MAILSLOT_DIR", url)
    try:
        sent = send("--to", "bob")
        assert sent.returncode == 0 and sent.stderr == ""
        [run] = wait_until(lambda: runs(calls), 60, what="bob's wake")
        assert run["id"] == json.loads(sent.stdout)["id"]
        running = watchers.record(store)
        assert running is not None and isinstance(running["pid"], int)
        proc = Path(f"/proc/{running['pid']}")
        assert "s3cret-pw" not in (proc / "cmdline").read_text()  # never in argv
        assert stat.S_IMODE((proc / "environ").stat().st_mode) == 0o400  # its own only
        assert "s3cret-pw" not in json.dumps(run["env"])  # nor passed to a woken program
        assert "s3cret-pw" not in Path(watchers.base_path(store) + ".log").read_text()
    finally:
        for pid in _watch_processes():
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        store.close()


def test_a_watcher_that_cannot_reach_its_store_is_reported_by_the_next_send(
        tmp_path: Path) -> None:
    store = open_store("postgresql://nobody@127.0.0.1:1/nothing")
    config = {"agents": {"bob": {"wake_on_mail": True, "wake_method": "command",
                                 "command": ["true"]}}}
    assert watchers.ensure(store, config) is None  # started: it goes on without waiting
    base = watchers.base_path(store)
    wait_until(lambda: os.path.exists(base + ".failed") and not watchers.is_running(store),
               60, what="the watcher to fail")
    said = watchers.ensure(store, config)
    assert said is not None and said.startswith("the last watcher started here stopped: ")
    assert "127.0.0.1" in said and base + ".log" in said and "\n" not in said


def test_a_planted_note_beside_the_lock_is_neither_waited_on_nor_shown(
        root: Path, tmp_path: Path) -> None:
    agent, calls = woken(tmp_path)
    configure(root, {"bob": agent})
    note = Path(watchers.base_path(FileStore(root)) + ".failed")
    note.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.mkfifo(note)  # a reader that waited for a writer would hang the send
    first = send("--to", "bob")
    assert first.returncode == 0 and first.stderr == ""
    wait_until(lambda: runs(calls), 60, what="bob's wake")
    assert not note.exists()  # the watcher that reached its store cleared it
    for pid in _watch_processes():
        os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not watchers.is_running(FileStore(root)), 60, what="the watcher to end")
    (tmp_path / "said").write_text("a forged reason")
    note.symlink_to(tmp_path / "said")
    second = send("--to", "bob")
    assert second.returncode == 0 and second.stderr == ""


# The sender's sandbox and descriptors --------------------------------------------------
def test_a_send_from_a_network_namespace_starts_no_watcher_there(
        root: Path, tmp_path: Path) -> None:
    agent, calls = woken(tmp_path)
    configure(root, {"bob": agent})
    boxed = subprocess.run(
        ["unshare", "--net", "--", sys.executable, "-m", "mailslot", "--agent", "alice",
         "send", "--to", "bob", "--subject", "s", "--body", "b", "--json"],
        capture_output=True, text=True, timeout=60, check=False)
    assert boxed.returncode == 0, boxed.stderr
    [note] = boxed.stderr.splitlines()
    assert note.startswith("mailslot: note: wakes cannot happen now: this process runs in a "
                           "sandbox (its network namespace")
    assert "the next ordinary send, a hook or `mailslot watch`" in note
    assert not watchers.is_running(FileStore(root)) and Queue(FileStore(root)).agents() == ["bob"]
    later = send("--to", "bob")  # an ordinary send, outside the sandbox
    assert later.returncode == 0 and later.stderr == ""
    woke = wait_until(lambda: len(runs(calls)) == 2 and runs(calls), 60, what="both wakes")
    ids = {json.loads(boxed.stdout)["id"], json.loads(later.stdout)["id"]}
    assert {r["id"] for r in woke} == ids
    assert {r["net"] for r in woke} == {os.readlink("/proc/self/ns/net")}  # with the network


def test_an_on_demand_watcher_started_in_a_sandbox_stops_at_once(
        root: Path, tmp_path: Path) -> None:
    agent, calls = woken(tmp_path)
    configure(root, {"bob": agent}, watcher={"on_demand": False})
    assert send("--to", "bob").returncode == 0  # queued; nobody started a watcher
    boxed = subprocess.run(
        ["unshare", "--net", "--", sys.executable, "-m", "mailslot", "--dir", str(root),
         "watch", "--started", "on-demand"],
        capture_output=True, text=True, timeout=60, check=False)
    assert boxed.returncode == 0
    assert boxed.stdout.startswith("mailslot: note: not watching: this watcher runs in a "
                                   "sandbox (its network namespace")
    assert not runs(calls) and Queue(FileStore(root)).agents() == ["bob"]


LOW_LIMIT = """
import os, resource, sys
os.dup2(int(sys.argv[1]), 100)  # inheritable, above the limit set next
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
os.execv(sys.executable, [sys.executable, "-m", "mailslot", *sys.argv[2:]])
"""


def test_a_send_under_a_low_descriptor_limit_still_starts_a_watcher_that_holds_none(
        root: Path, tmp_path: Path) -> None:
    agent, calls = woken(tmp_path)
    configure(root, {"bob": agent})
    read_end, write_end = os.pipe()
    try:
        sent = subprocess.run(
            [sys.executable, "-c", LOW_LIMIT, str(write_end), "--agent", "alice", "send",
             "--to", "bob", "--subject", "s", "--body", "b"],
            capture_output=True, text=True, timeout=60, check=False, pass_fds=(write_end,))
        os.close(write_end)
        assert sent.returncode == 0 and sent.stderr == ""
        wait_until(lambda: runs(calls), 60, what="bob's wake")
        running = watchers.record(FileStore(root))
        assert running is not None and isinstance(running["pid"], int)
        assert not os.path.exists(f"/proc/{running['pid']}/fd/100")
        os.set_blocking(read_end, False)
        assert os.read(read_end, 1) == b""  # the end: nobody holds the write end
    finally:
        os.close(read_end)
