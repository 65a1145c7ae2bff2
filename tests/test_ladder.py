"""The delivery ladder (stored → wake → surfaced → read → done → replied) on both
stores: surfaced is recorded only once the host took what showed the mail, a sender
asking to be told hears once, ``status --wait`` blocks until a rung is reached, and
mail that cannot move says why (in ``status`` and in ``who``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.service.delivery import Delivery
from mailslot.store import Store
from mailslot.wake.queue import log as wake_log
from pgcluster import Cluster
from support import put_config, run_cli

START = {"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup"}
PROMPT = {"session_id": "s-1", "hook_event_name": "UserPromptSubmit", "prompt": "go"}


@pytest.fixture(params=["files", "postgres"])
def location(request: pytest.FixtureRequest, root: Path) -> Iterator[str]:
    """The mailbox's location: a folder, or a database on the throwaway cluster."""
    if request.param == "files":
        yield str(root)
    else:
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        yield cluster.new_database()


@pytest.fixture
def store(location: str) -> Store:
    opened = open_store(location)
    opened.init()
    return opened


@pytest.fixture
def as_agent(store: Store) -> Callable[[str], Mailbox]:
    return lambda name: Mailbox(store, Identity(name, "--agent"))


def hook(location: str, agent: str, payload: dict[str, object], *,
         stdout: int | None = subprocess.PIPE, event: str = "session-start") -> str:
    """``mailslot hook claude EVENT`` as a real process, its output to a pipe (as a
    host reads it) or wherever ``stdout`` says."""
    env = {**os.environ, "MAILSLOT_DIR": location}
    done = subprocess.run([sys.executable, "-m", "mailslot", "--agent", agent, "hook",
                           "claude", event], input=json.dumps({**payload, "cwd": os.getcwd()})
                          .encode(), stdout=stdout, stderr=subprocess.PIPE, env=env,
                          timeout=60, check=True)
    return (done.stdout or b"").decode()


def recipient(box: Mailbox, message_id: str, agent: str = "bob") -> dict[str, object]:
    return next(r.__dict__ for r in box.status(message_id).recipients if r.agent == agent)


def test_a_session_start_the_host_took_is_surfaced_for_that_session(
        location: str, as_agent: Callable[[str], Mailbox]) -> None:
    alice = as_agent("alice")
    sent = alice.send("bob", "Schema", "ready")
    before = recipient(alice, sent.id)
    assert before["rung"] == "stored" and before["surfaced"] is None
    assert "no live session" in str(before["waiting"])

    out = hook(location, "bob", START)
    assert sent.id in out
    after = recipient(alice, sent.id)
    assert after["rung"] == "surfaced" and after["state"] == "unread"
    assert after["waiting"] is None
    surfaced = after["surfaced"]
    assert isinstance(surfaced, dict)
    assert (surfaced["host"], surfaced["session"], surfaced["how"], surfaced["times"]) == (
        "claude", "s-1", "start", 1)

    as_agent("bob").read(sent.id)
    assert recipient(alice, sent.id)["rung"] == "read"
    as_agent("bob").reply(sent.id, "thanks")
    last = recipient(alice, sent.id)
    assert last["rung"] == "replied" and last["replied_at"] and last["done_at"]
    assert last["surfaced"] == surfaced  # the first showing stays the one named


def test_output_no_host_reads_is_not_surfaced(
        location: str, as_agent: Callable[[str], Mailbox], tmp_path: Path) -> None:
    """A hook whose output went to a file or the null device (a wrapper that drops it)
    showed no model anything."""
    alice = as_agent("alice")
    sent = alice.send("bob", "Schema", "ready")
    hook(location, "bob", START, stdout=subprocess.DEVNULL)
    with open(tmp_path / "out.json", "wb") as kept:
        hook(location, "bob", START, stdout=kept.fileno())
    assert sent.id in (tmp_path / "out.json").read_text()
    assert recipient(alice, sent.id)["rung"] == "stored"


def test_a_prompt_surfaces_only_what_is_new_to_the_session(
        location: str, as_agent: Callable[[str], Mailbox]) -> None:
    alice = as_agent("alice")
    first = alice.send("bob", "one", "1")
    hook(location, "bob", START)
    second = alice.send("bob", "two", "2")
    out = hook(location, "bob", PROMPT, event="user-prompt-submit")
    assert second.id in out and first.id not in out
    assert recipient(alice, first.id)["surfaced"]["how"] == "start"  # type: ignore[index]
    assert recipient(alice, second.id)["surfaced"]["how"] == "prompt"  # type: ignore[index]


def test_one_notice_when_the_first_recipient_reaches_the_rung(
        store: Store, as_agent: Callable[[str], Mailbox]) -> None:
    alice = as_agent("alice")
    sent = alice.send(["bob", "carol"], "Review", "please", notify_when="read")  # bob+1
    for name in ("bob", "carol"):  # surfaced is below the rung asked for: no notice
        delivery = Delivery(store, name, Identity(name, "--agent"))
        planned = delivery.plan("start", f"{name}-1", limit=10_000)
        assert planned is not None
        delivery.commit(planned, host="claude")
    assert [i.message.sender for i in alice.inbox()] == []
    as_agent("carol").done([sent.id])  # done passes read: carol is the first there
    as_agent("bob").read(sent.id)
    notices = [i.message for i in alice.inbox()]
    assert [(m.sender, m.subject) for m in notices] == [("mailslot", "read: your message to carol")]
    assert sent.id in alice.read(notices[0].id).message.body


def test_notify_when_is_refused_unless_a_rung(as_agent: Callable[[str], Mailbox]) -> None:
    from mailslot.core.errors import InvalidInput

    with pytest.raises(InvalidInput, match="notify_when must be one of surfaced, read, done"):
        as_agent("alice").send("bob", "x", "y", notify_when="replied")


def test_why_mail_waits(store: Store, as_agent: Callable[[str], Mailbox]) -> None:
    alice = as_agent("alice")
    put_config(store, {"agents": {"bob": {"wake_on_mail": True, "wake_method": "command",
                                          "command": ["/bin/false", "{id}"]},
                                  "carol": {"wake_on_mail": False}},
                       "watcher": {"on_demand": False}})
    sent = alice.send(["bob", "carol"], "Build", "red")
    assert "no watcher runs to wake it" in str(recipient(alice, sent.id)["waiting"])
    assert "no wake (off)" in str(recipient(alice, sent.id, "carol")["waiting"])
    wake_log(store, "wake_failed", sent.id, "bob", method="command", attempt=3,
             reason="exit status 1", final=True)
    bob = recipient(alice, sent.id)
    assert bob["wake"] == {"outcome": "gave_up", "method": "command",
                           "at": bob["wake"]["at"], "reason": "exit status 1"}  # type: ignore[index]
    assert bob["waiting"] == "the wake (command) gave up: exit status 1"


def test_who_lists_agents_whose_mail_sat_unsurfaced(
        store: Store, as_agent: Callable[[str], Mailbox]) -> None:
    alice = as_agent("alice")
    put_config(store, {"unsurfaced_after_minutes": 0.001})  # 60 ms
    old = alice.send("bob", "old", "1")
    alice.send("carol", "old", "2")
    time.sleep(0.1)  # the threshold's own time passing, not synchronisation
    delivery = Delivery(store, "carol", Identity("carol", "--agent"))
    planned = delivery.plan("start", "c-1", limit=10_000)
    assert planned is not None
    delivery.commit(planned, host="claude")
    found = {a.name: a for a in alice.who()}
    assert (found["bob"].unsurfaced, found["carol"].unsurfaced) == (1, 0)
    assert found["bob"].unsurfaced_since == old.id[:10] + "T" + old.id[11:13] + ":" + \
        old.id[13:15] + ":" + old.id[15:17] + "Z"
    put_config(store, {})  # the default, an hour: nothing is that old
    assert all(a.unsurfaced == 0 for a in as_agent("alice").who())


def test_who_says_at_least_when_more_mail_waits_than_it_looked_at(
        store: Store, as_agent: Callable[[str], Mailbox],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from mailslot.frontends.cli import render
    from mailslot.service import overview

    monkeypatch.setattr(overview, "UNSURFACED_LOOKED", 2)
    alice = as_agent("alice")
    put_config(store, {"unsurfaced_after_minutes": 0.001})  # 60 ms
    for n in range(3):
        alice.send("bob", "old", str(n))
    alice.send("carol", "old", "c")
    time.sleep(0.1)  # the threshold's own time passing, not synchronisation
    found = {a.name: a for a in alice.who()}
    assert (found["bob"].unsurfaced, found["bob"].unsurfaced_more) == (2, True)
    assert (found["carol"].unsurfaced, found["carol"].unsurfaced_more) == (1, False)
    table = render.who(list(found.values()))
    assert "bob has at least 2 unread message(s)" in table
    assert "carol has 1 unread message(s)" in table


def test_status_wait_blocks_until_the_rung_and_times_out_in_one_line(
        location: str, as_agent: Callable[[str], Mailbox]) -> None:
    sent = as_agent("alice").send("bob", "ping", "x")
    env = {**os.environ, "MAILSLOT_DIR": location}
    late = run_cli("--agent", "alice", "status", sent.id, "--wait", "surfaced",
                   "--timeout", "0.3", env=env)
    assert late.returncode == 1 and late.stdout == ""
    assert late.stderr == (f"mailslot: error: timed out: no recipient of {sent.id} reached "
                           "'surfaced' within 0.3 s (bob stored)\n")
    as_json = run_cli("--agent", "alice", "status", sent.id, "--wait", "read", "--timeout",
                      "0", "--json", env=env)
    assert as_json.returncode == 1 and json.loads(as_json.stderr)["code"] == "failed"
    waiting = subprocess.Popen(
        [sys.executable, "-m", "mailslot", "--agent", "alice", "status", sent.id, "--wait",
         "surfaced", "--timeout", "60", "--json"], stdout=subprocess.PIPE, env=env)
    hook(location, "bob", START)
    out, _ = waiting.communicate(timeout=60)
    assert waiting.returncode == 0
    assert json.loads(out)["recipients"][0]["rung"] == "surfaced"
    bad = run_cli("--agent", "alice", "status", sent.id, "--wait", "gone", env=env)
    assert bad.returncode == 2 and "invalid choice: 'gone'" in bad.stderr


def test_the_send_command_takes_notify_when(location: str) -> None:
    env = {**os.environ, "MAILSLOT_DIR": location}
    sent = run_cli("--agent", "alice", "send", "--to", "bob", "--subject", "s", "--body",
                   "b", "--notify-when", "surfaced", "--json", env=env)
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["notify_when"] == "surfaced"
    hook(location, "bob", START)
    inbox = json.loads(run_cli("--agent", "alice", "inbox", "--json", env=env).stdout)
    assert [(m["from"], m["subject"]) for m in inbox] == [
        ("mailslot", "surfaced: your message to bob")]


@pytest.mark.anyio
async def test_a_tool_read_is_surfaced_once_its_answer_was_written(
        root: Path, isolated: Path) -> None:
    """``read_messages`` over a real stdio server: the receipt follows the answer; a
    read of headers only (another mailbox) surfaces nothing."""
    from mcp import Client, StdioServerParameters

    sent = Mailbox(open_store(str(root)), Identity("alice", "--agent")).send(
        "bob", "Schema", "ready", notify_when="surfaced")
    env = {"MAILSLOT_DIR": str(root), "HOME": str(isolated / "home")}
    mailslot = str(Path(sys.executable).parent / "mailslot")
    params = StdioServerParameters(command=mailslot, args=["serve", "--agent", "bob"], env=env)
    alice = Mailbox(open_store(str(root)), Identity("alice", "--agent"))
    async with Client(params) as bob:
        others = await bob.call_tool("read_messages", {"for": "alice"})
        assert not others.is_error
        assert recipient(alice, sent.id)["rung"] == "stored"
        page = await bob.call_tool("read_messages", {})
        assert sent.id in str(page.structured_content)
        # The receipt is written just after the answer left, so a status asked at once
        # may come before it: ask until it shows (bounded), as a sender polling would.
        deadline = time.monotonic() + 30
        while True:
            status = await bob.call_tool("message_status", {"message_id": sent.id})
            ladder = (status.structured_content or {})["recipients"][0]
            if ladder["rung"] != "stored" or time.monotonic() > deadline:
                break
            await anyio.sleep(0.05)
    assert ladder["rung"] == "surfaced" and ladder["surfaced"]["how"] == "tool"
    assert [i.message.subject for i in alice.inbox()] == ["surfaced: your message to bob"]
