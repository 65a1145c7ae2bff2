"""Peers over a real OpenSSH: a test's own sshd on loopback, two nodes (two HOMEs, two
mailboxes), set up as two machines would be (tests/sshlab.py).

Node ``a`` is this test's own world (its HOME and mailbox); node ``b`` is reached over
ssh, its mailslot given its own HOME by the script ``--remote-mailslot`` names. Links
taken down mid-batch, sshd restarted and the watcher killed with ``kill -9`` mid-batch
are made to happen at a pause point in b's ``peer serve`` (a script of the test's, run
as b's mailslot), so each race is the one named, every time.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hookkit import fixture
from mailslot import Mailbox
from mailslot.core.errors import MailslotError
from pgcluster import Cluster
from sshlab import MAILSLOT, Node, Sshd, clients, cut

pytestmark = pytest.mark.skipif(not Path("/usr/sbin/sshd").exists(),
                                reason="needs openssh-server (.ci/run installs it)")

PAUSE = """
import os, sys, time
from pathlib import Path
from mailslot.service import peer_mail

mark = Path(os.environ["PEER_PAUSE_MARK"])
at = int(os.environ["PEER_PAUSE_AT"])
taken = peer_mail.Taking._mail
count = [0]

def _mail(self, envelope):
    result = taken(self, envelope)
    count[0] += 1
    if count[0] == at and not mark.exists():
        mark.write_text(str(os.getpid()))
        while not mark.with_suffix(".go").exists():
            time.sleep(0.02)
    return result

peer_mail.Taking._mail = _mail
from mailslot.frontends.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@dataclass
class Lab:
    sshd: Sshd
    a: Node
    b: Node
    ssh_config: Path
    folder: Path

    @property
    def ssh_command(self) -> str:
        return f"ssh -F {self.ssh_config}"

    def add(self, here: Node, there: Node, *extra: str) -> subprocess.CompletedProcess[str]:
        return here.run("peer", "add", there.name, f"host-{there.name}", "--remote-store",
                        there.store, "--remote-mailslot", str(there.remote),
                        "--ssh-command", self.ssh_command, *extra)


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout)


def _make(node: Node) -> None:
    node.home.mkdir(parents=True, exist_ok=True)
    if "://" not in node.store:
        node.run("init")
    node.run("config", "set", "node", node.name)
    node.run("config", "set", "governor.pair_sends_per_hour", "null")
    node.run("config", "set", "governor.agent_sends_per_hour", "null")


@pytest.fixture(params=["files-files"])
def stores(request: pytest.FixtureRequest, root: Path, tmp_path: Path) -> tuple[str, str]:
    """Where nodes ``a`` and ``b`` keep their mail: a folder or a PostgreSQL database."""
    kinds = request.param.split("-")
    found = []
    for kind, folder in zip(kinds, (root, tmp_path / "box-b"), strict=True):
        if kind == "files":
            found.append(str(folder))
        else:
            cluster: Cluster = request.getfixturevalue("pg_cluster")
            found.append(cluster.new_database())
    return found[0], found[1]


@pytest.fixture
def lab(tmp_path: Path, home: Path, stores: tuple[str, str],
        monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    sshd = Sshd(tmp_path / "sshd").setup().start()
    a = Node("a", home, stores[0])
    b = Node("b", tmp_path / "home-b", stores[1])
    if "://" in stores[0]:
        monkeypatch.setenv("MAILSLOT_STORE", stores[0])
    config = sshd.client_config(tmp_path / "ssh_config", {"host-a": "", "host-b": ""})
    for node in (a, b):
        _make(node)
        node.write_remote(tmp_path)
    lab = Lab(sshd, a, b, config, tmp_path)
    try:
        yield lab
    finally:
        cut(config)
        sshd.stop()


def _inbox(node: Node, agent: str) -> list[dict[str, Any]]:
    found = _json(node.run("--agent", agent, "inbox", "--json", "--all", "--limit", "100000"))
    assert isinstance(found, list)
    return found


def _wait(what: Callable[[], bool], seconds: float = 90.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if what():
            return
        time.sleep(0.1)
    raise AssertionError("the condition did not come true in time")


# Keys and records ----------------------------------------------------------------------
def test_peer_add_exchanges_node_keys_pins_them_and_can_run_again(lab: Lab) -> None:
    a, b = lab.a, lab.b
    b.run("--agent", "gemini", "send", "--to", "codex", "--subject", "hi", "--body", "x",
          "--new")
    added = lab.add(a, b)
    b_key = _json(b.run("peer", "list", "--json"))["fingerprint"]
    a_key = _json(a.run("peer", "list", "--json"))["fingerprint"]
    assert f"node key {b_key} (pinned)" in added.stdout and a_key in added.stdout
    [peer_b] = _json(a.run("peer", "list", "--json"))["peers"]
    assert peer_b["fingerprint"] == b_key and peer_b["ssh"] == "host-b"
    assert "codex" in peer_b["roster"]
    [peer_a] = _json(b.run("peer", "list", "--json"))["peers"]  # pinned by b, inbound
    assert peer_a["name"] == "a" and peer_a["fingerprint"] == a_key and peer_a["ssh"] is None
    again = lab.add(a, b)
    assert "already pinned, unchanged" in again.stdout
    for node in (a, b):
        [pem] = (node.home / ".config" / "mailslot" / "nodes").iterdir()
        assert pem.stat().st_mode & 0o777 == 0o600
        if "://" not in node.store:
            assert not [p for p in Path(node.store).rglob("*")
                        if p.is_file() and b"PRIVATE KEY" in p.read_bytes()]


def test_a_changed_key_is_refused_until_the_owner_adds_the_peer_again(lab: Lab) -> None:
    a, b = lab.a, lab.b
    lab.add(a, b)
    _new_node_key(b)
    refused = a.run("peer", "add", "b", "host-b", check=False)
    assert refused.returncode == 1 and "node key changed" in refused.stderr
    synced = a.run("peer", "sync", check=False)
    assert synced.returncode == 1 and "node key changed" in synced.stdout
    a.run("peer", "remove", "b")
    assert "(pinned)" in lab.add(a, b).stdout


def _new_node_key(node: Node) -> None:
    """The node is set up again: a new key (b still pins a's)."""
    for pem in (node.home / ".config" / "mailslot" / "nodes").iterdir():
        pem.unlink()
    if "://" in node.store:
        from mailslot.backends import open_store
        from mailslot.peers.state import PeerState

        PeerState(open_store(node.store)).delete("node", ())
    else:
        (Path(node.store) / "peers" / "node.json").unlink()


def test_a_node_name_that_reads_as_a_session_id_is_refused_at_peer_add(lab: Lab) -> None:
    refused = lab.a.run("peer", "add", "1a2b3c4d", "host-b", check=False)
    assert refused.returncode == 2 and "could be read as a session id" in refused.stderr


def test_a_peer_named_otherwise_than_its_node_is_refused(lab: Lab) -> None:
    refused = lab.a.run("peer", "add", "bee", "host-b", "--remote-store", lab.b.store,
                        "--remote-mailslot", str(lab.b.remote), "--ssh-command",
                        lab.ssh_command, check=False)
    assert refused.returncode == 1 and "calls itself 'b'" in refused.stderr


# Mail both ways, and everything back -------------------------------------------------
@pytest.mark.parametrize("stores", ["files-files", "files-postgresql", "postgresql-files",
                                    "postgresql-postgresql"], indirect=True)
def test_mail_goes_to_a_peer_and_everything_comes_back(lab: Lab) -> None:
    a, b = lab.a, lab.b
    b.run("--agent", "gemini", "send", "--to", "codex", "--subject", "hi", "--body", "x",
          "--new")
    lab.add(a, b)
    sent = _json(a.run("--agent", "claude", "send", "--to", "codex@b", "--subject",
                       "hello b", "--body", "across", "--notify-when", "read", "--json"))
    queued = _json(a.run("--agent", "claude", "status", sent["id"], "--json"))
    assert queued["recipients"][0]["rung"] == "queued"
    assert "queued for b" in queued["recipients"][0]["waiting"]
    a.run("peer", "sync")
    [there] = [m for m in _inbox(b, "codex") if m["subject"] == "hello b"]
    assert there["from"] == "claude@a" and there["to"] == ["codex"]
    assert there["id"].replace("claude@a_to_codex", "claude_to_codex@b") == sent["id"]
    shown_there = b.run("--agent", "codex", "hook", "claude", "session-start",
                        stdin=fixture("claude-session-start").decode())
    assert "claude@a" in shown_there.stdout  # surfaced at b: a rung that comes back
    b.run("--agent", "codex", "read", there["id"])
    b.run("--agent", "codex", "reply", there["id"], "--body", "back at you")
    a.run("peer", "sync")
    status = _json(a.run("--agent", "claude", "status", sent["id"], "--json"))
    [codex] = status["recipients"]
    assert codex["agent"] == "codex@b" and codex["rung"] == "replied"
    assert codex["read_at"] and codex["done_at"] and codex["replied_at"]
    assert codex["surfaced"]["how"] == "start" and codex["surfaced"]["host"] == "claude"
    mine = _inbox(a, "claude")
    assert [m["from"] for m in mine if m["subject"] == "Re: hello b"] == ["codex@b"]
    assert [m["from"] for m in mine if m["subject"].startswith("read:")] == ["mailslot"]
    who = {w["name"]: w for w in _json(a.run("who", "--json"))}
    assert who["codex@b"]["node"] == "b" and who["codex@b"]["address"] == "codex@b"
    assert who["claude"]["node"] == "a" and who["claude"]["stale_since"] is None
    shown = a.run("--agent", "claude", "hook", "claude", "session-start",
                  stdin=fixture("claude-session-start").decode())
    assert "codex@b" in shown.stdout
    reply = next(m for m in mine if m["from"] == "codex@b")
    a.run("--agent", "claude", "reply", reply["id"], "--body", "and back again")
    a.run("peer", "sync")
    assert [m["from"] for m in _inbox(b, "codex") if m["subject"] == "Re: hello b"] \
        == ["claude@a"]


def test_mail_from_a_peer_is_shown_with_its_node_in_read_mcp_and_the_web_page(
        lab: Lab, root: Path) -> None:
    a, b = lab.a, lab.b
    lab.add(b, a)  # b reaches a this time; a pins b as a peer that connects here
    b.run("--agent", "codex", "send", "--to", "claude@a", "--subject", "from b", "--body",
          "hello")
    b.run("peer", "sync")
    [item] = _inbox(a, "claude")
    read = a.run("--agent", "claude", "read", item["id"])
    assert "from:     codex@b" in read.stdout
    from mailslot.frontends.mcp import tools
    from test_web import login, page
    from webserver import web_server

    result = tools.read_messages(lambda: Mailbox.open(str(root), "claude"),
                                 unread_only=False)
    assert "from: codex@b" in result.content[0].text  # type: ignore[union-attr]
    with web_server() as running:
        html = page(running, login(running), "/mail/claude?state=read")
    assert "codex@b" in html


# Store and forward ---------------------------------------------------------------------
def test_the_watcher_carries_mail_with_nobody_starting_anything(lab: Lab, root: Path) -> None:
    a, b = lab.a, lab.b
    lab.add(a, b)
    a.run("config", "set", "watcher.idle_seconds", "20")
    sent = _json(a.run("--agent", "claude", "send", "--to", "codex@b", "--subject", "auto",
                       "--body", "x", "--json", MAILSLOT_ON_DEMAND_WATCHER="1"))
    try:
        _wait(lambda: any(m["subject"] == "auto" for m in _inbox(b, "codex")))
        [there] = _inbox(b, "codex")
        b.run("--agent", "codex", "done", there["id"])
        _wait(lambda: _json(a.run("--agent", "claude", "status", sent["id"], "--json"))
              ["recipients"][0]["rung"] == "done")
    finally:
        _stop_watcher(root)


def _stop_watcher(root: Path) -> None:
    from mailslot.mail import watchers

    found = watchers.record(Mailbox.open(str(root)).store)
    if found and isinstance(found.get("pid"), int):
        import os

        os.kill(found["pid"], signal.SIGTERM)
        _wait(lambda: watchers.record(Mailbox.open(str(root)).store) is None)


def _flood(root: Path, n: int) -> list[str]:
    box = Mailbox.open(str(root), "claude")
    return [box.send("codex@b", f"m{i}", "x").id for i in range(n)]


def _arrived(b: Node) -> list[str]:
    folder = Path(b.store) / "agents" / "codex" / "new"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def _paused(lab: Lab, at: int) -> Path:
    """b's mailslot pauses once after storing its ``at``-th message of a link."""
    mark = lab.folder / "paused"
    lab.b.env_extra.update(PEER_PAUSE_MARK=str(mark), PEER_PAUSE_AT=str(at))
    lab.b.write_remote(lab.folder, PAUSE)
    return mark


def test_a_link_taken_down_mid_batch_loses_nothing_and_doubles_nothing(lab: Lab,
                                                                       root: Path) -> None:
    a, b = lab.a, lab.b
    lab.add(a, b)
    mark = _paused(lab, 250)  # the 50th message of the second batch of 200
    lab.add(a, b)  # the new remote program
    ids = _flood(root, 500)
    failed: list[BaseException] = []

    def carry() -> None:
        try:
            Mailbox.open(str(root)).carry("b")
        except MailslotError as exc:
            failed.append(exc)

    carrying = threading.Thread(target=carry)
    carrying.start()
    _wait(mark.exists)
    lab.sshd.stop()  # the link goes down: sshd, and the open connection's client
    assert cut(lab.ssh_config) == 1
    mark.with_suffix(".go").write_text("")  # b stores the rest of that batch, unanswered
    carrying.join(timeout=120)
    assert failed and len(_arrived(b)) < 500
    refused = a.run("peer", "sync", check=False)  # sshd is down: refused, retried later
    assert refused.returncode == 1
    down = _json(a.run("--agent", "claude", "status", ids[-1], "--json"))
    assert "queued for b: link down since" in down["recipients"][0]["waiting"]
    lab.sshd.start()  # back, on the same port
    a.run("peer", "sync")
    arrived = _arrived(b)
    assert len(arrived) == 500 == len(set(arrived))
    assert sorted(i.replace("claude_to_codex@b", "claude@a_to_codex") + ".md"
                  for i in ids) == arrived
    assert list((root / "peers" / "outbox" / "b").iterdir()) == []


def test_the_watcher_killed_mid_batch_loses_nothing_and_doubles_nothing(
        lab: Lab, root: Path) -> None:
    a, b = lab.a, lab.b
    lab.add(a, b)
    mark = _paused(lab, 250)
    lab.add(a, b)
    ids = _flood(root, 500)
    log = open(lab.folder / "watcher.log", "ab")  # noqa: SIM115 (the watchers write it)
    watcher = subprocess.Popen([str(MAILSLOT), "watch"], env=a.env(), stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        _wait(mark.exists)
        watcher.kill()  # kill -9, mid-batch
        watcher.wait(timeout=30)
        mark.with_suffix(".go").write_text("")
        _wait(lambda: not clients(lab.ssh_config))  # its link ends with it
        assert 250 <= len(_arrived(b)) < 500
        watcher = subprocess.Popen([str(MAILSLOT), "watch"], env=a.env(), stdout=log,
                                   stderr=subprocess.STDOUT)
        _wait(lambda: len(_arrived(b)) >= 500 and not list(
            (root / "peers" / "outbox" / "b").iterdir()))
    finally:
        watcher.terminate()
        watcher.wait(timeout=60)
        log.close()
    arrived = _arrived(b)
    assert len(arrived) == 500 == len(set(arrived))
    assert sorted(i.replace("claude_to_codex@b", "claude@a_to_codex") + ".md"
                  for i in ids) == arrived


def test_mail_that_waits_too_long_goes_back_to_its_sender(lab: Lab) -> None:
    a, b = lab.a, lab.b
    b.run("--agent", "gemini", "send", "--to", "codex", "--subject", "hi", "--body", "x",
          "--new")
    lab.add(a, b)
    lab.sshd.stop()
    sent = _json(a.run("--agent", "claude", "send", "--to", "codex@b", "--subject", "late",
                       "--body", "x", "--json"))
    a.run("peer", "sync", check=False)
    who = {w["name"]: w for w in _json(a.run("who", "--json"))}
    assert who["codex@b"]["stale_since"]  # its link is down: since when
    assert "codex@b [stale: link down since" in a.run("who").stdout
    a.run("config", "set", "peer_bounce_hours", "0.0001")
    time.sleep(0.5)  # older than 0.36 s: the next look sends it back
    a.run("peer", "sync", check=False)
    status = _json(a.run("--agent", "claude", "status", sent["id"], "--json"))
    [codex] = status["recipients"]
    assert codex["rung"] == "bounced" and "waited" in codex["waiting"]
    assert "link down since" in codex["waiting"]
    notices = [m for m in _inbox(a, "claude") if m["from"] == "mailslot"]
    assert [n["subject"] for n in notices] == ["undelivered: your message to codex@b"]


def test_each_owner_decides_which_peers_may_send_to_whom(lab: Lab) -> None:
    a, b = lab.a, lab.b
    lab.add(a, b)
    b.run("config", "set", "peers.a.may_send_to", '["gemini", "claude"]')
    b.run("--agent", "claude", "gate", "on")  # gates apply to remote senders too
    for to in ("codex@b", "claude@b", "gemini@b"):
        a.run("--agent", "claude", "send", "--to", to, "--subject", f"to {to}", "--body", "x")
    a.run("peer", "sync")
    assert [m["subject"] for m in _inbox(b, "gemini")] == ["to gemini@b"]
    assert _inbox(b, "codex") == [] and _inbox(b, "claude") == []
    told = {m["subject"]: m for m in _inbox(a, "claude") if m["from"] == "mailslot"}
    assert set(told) == {"undelivered: your message to codex@b",
                         "undelivered: your message to claude@b"}
    body = a.run("--agent", "claude", "read",
                 told["undelivered: your message to claude@b"]["id"]).stdout
    assert "accepts mail only from admitted members" in body


def test_the_loop_governor_holds_remote_senders_to_the_owners_limits(lab: Lab) -> None:
    a, b = lab.a, lab.b
    lab.add(a, b)
    b.run("config", "set", "governor.pair_sends_per_hour", "1")
    for n in range(2):
        a.run("--agent", "claude", "send", "--to", "codex@b", "--subject", f"n{n}", "--body",
              "x")
    a.run("peer", "sync")
    assert [m["subject"] for m in _inbox(b, "codex")] == ["n0"]
    [told] = [m for m in _inbox(a, "claude") if m["from"] == "mailslot"]
    assert "too many messages from claude@a" in a.run("--agent", "claude", "read",
                                                      told["id"]).stdout


def test_a_removed_peer_is_refused_at_the_next_message_both_ways(lab: Lab) -> None:
    a, b = lab.a, lab.b
    lab.add(a, b)
    b.run("peer", "remove", "a")
    a.run("--agent", "claude", "send", "--to", "codex@b", "--subject", "x", "--body", "y")
    synced = a.run("peer", "sync", check=False)
    assert synced.returncode == 1 and "removed a as a peer" in synced.stdout
    a.run("peer", "remove", "b")
    refused = a.run("--agent", "claude", "send", "--to", "codex@b", "--subject", "x",
                    "--body", "y", check=False)
    assert refused.returncode == 1 and "no peer of this node now" in refused.stderr


def test_the_remote_command_line_holds_no_callers_data(lab: Lab, tmp_path: Path) -> None:
    """ssh is given the remote program's path and the fixed words only: a store, a
    subject or a body full of shell never reach a remote shell."""
    a, b = lab.a, lab.b
    seen = tmp_path / "argv"
    spy = tmp_path / "spy-ssh"
    spy.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" >> {seen}\nexec ssh \"$@\"\n")
    spy.chmod(0o755)
    lab.add(a, b, "--ssh-command", f"{spy} -F {lab.ssh_config}")
    evil = "$(touch /tmp/pwned); `id`; rm -rf ~"
    a.run("--agent", "claude", "send", "--to", "codex@b", "--subject", evil, "--body", evil)
    a.run("peer", "sync")
    words = seen.read_text().splitlines()
    assert words[-2:] == ["host-b", f"{b.remote} peer serve"]
    assert not any("$(" in w or "`" in w for w in words)
    assert [m["subject"] for m in _inbox(b, "codex")] == [evil]
    assert not Path("/tmp/pwned").exists()


def test_peer_serve_greets_even_past_a_noisy_login(lab: Lab, tmp_path: Path) -> None:
    noisy = tmp_path / "noisy"
    noisy.write_text(f"#!/bin/sh\necho 'Welcome to b!'\nexec {lab.b.remote} \"$@\"\n")
    noisy.chmod(0o755)
    lab.b.remote = noisy
    assert "(pinned)" in lab.add(lab.a, lab.b).stdout


def test_ssh_failing_is_one_line_naming_ssh_s_reason(lab: Lab) -> None:
    lab.sshd.stop()
    refused = lab.a.run("peer", "add", "b", "host-b", "--ssh-command", lab.ssh_command,
                        check=False)
    assert refused.returncode == 1
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("mailslot: error:") and "Connection refused" in line

