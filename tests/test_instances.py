"""Hook sessions and instances: every host session the hooks ran in is a
session of its agent, and ``name@session`` mail reaches that session only."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from conftest import Result
from hookkit import sender
from mailslot.access import fencing
from mailslot.access.identity import Identity
from mailslot.backends.files.file_store import FileStore
from mailslot.core.errors import InvalidInput, NotFound, Refused
from mailslot.mail.presence import hostname
from mailslot.service.delivery import Delivery
from mailslot.service.mailbox import Mailbox
from test_hooks_lifecycle import payload, prompt, shown, start
from wake_helpers import configure

Cli = Callable[..., Result]
Box = Callable[[str | None], Mailbox]
A = "aaaa1111-0000-4000-8000-000000000001"
B = "bbbb2222-0000-4000-8000-000000000002"
HOUR = 3600.0


def hook_sessions(cli: Cli, agent: str = "gemini") -> list[dict[str, object]]:
    r = cli("--json", "sessions", agent)
    assert r.code == 0, r.err
    return [s for s in json.loads(r.out) if s["kind"] == "hook"]


def instances(cli: Cli, agent: str = "gemini") -> list[str]:
    r = cli("--json", "who")
    assert r.code == 0, r.err
    return next(a["instances"] for a in json.loads(r.out) if a["name"] == agent)


def age(root: Path, session: str, seconds: float, agent: str = "gemini") -> None:
    path = root / "hook-sessions" / agent / session
    when = time.time() - seconds
    os.utime(path, (when, when))


# Hook sessions -----------------------------------------------------------------------
def test_a_hook_call_makes_its_host_session_a_session_of_the_agent(
        cli: Cli, root: Path) -> None:
    sender(root, "claude").send("gemini", "hi", "x")
    start(cli, A)
    [found] = hook_sessions(cli)
    assert (found["session"], found["program"], found["online"]) == (A, "claude", True)
    assert found["replaced_by"] is None
    assert instances(cli) == ["aaaa1111 (claude)"]
    r = cli("sessions", "gemini")
    assert f"gemini@{A}  claude hooks" in r.out and "online" in r.out


def test_every_hook_call_refreshes_the_session_and_keeps_its_facts(
        cli: Cli, root: Path) -> None:
    sender(root, "claude").send("gemini", "hi", "x")
    start(cli, A)
    record = (root / "hook-sessions" / "gemini" / A).read_bytes()
    age(root, A, 13 * HOUR)
    assert hook_sessions(cli)[0]["online"] is False  # no hook for 12 hours: offline
    assert instances(cli) == []
    prompt(cli, A)
    assert hook_sessions(cli)[0]["online"] is True
    assert (root / "hook-sessions" / "gemini" / A).read_bytes() == record


def test_a_session_no_hook_ran_in_for_30_days_is_forgotten(cli: Cli, root: Path) -> None:
    sender(root, "claude").send("gemini", "hi", "x")
    start(cli, A)
    start(cli, B)
    age(root, A, 31 * 24 * HOUR)
    start(cli, B)  # a session start prunes the agent's old sessions
    assert [s["session"] for s in hook_sessions(cli)] == [B]


def test_hook_sessions_are_never_fenced_and_never_block_an_exclusive_server(
        cli: Cli, root: Path, box: Box) -> None:
    sender(root, "claude").send("gemini", "hi", "x")
    start(cli, A)
    store = FileStore(root)
    assert fencing.start(store, "gemini", "srv1", exclusive=True, replace=None,
                         now=datetime.now().astimezone()) == []
    with pytest.raises(InvalidInput, match="no running session"):
        fencing.start(store, "gemini", "srv1", exclusive=True, replace=A,
                      now=datetime.now().astimezone())


# Instances: name@session ----------------------------------------------------------------
def two_sessions(cli: Cli, root: Path) -> str:
    """Gemini running twice (sessions A and B); returns plain mail both should see."""
    plain = sender(root, "claude").send("gemini", "for both", "x").id
    assert start(cli, A) == [plain] and start(cli, B) == [plain]
    return plain


def test_mail_to_an_instance_reaches_only_that_session_s_hooks(cli: Cli, root: Path) -> None:
    two_sessions(cli, root)
    claude = sender(root, "claude")
    one = claude.send("gemini@aaaa", "only you", "x")
    assert one.instance == A and one.to == ("gemini",)
    assert prompt(cli, B) == []
    assert one.id not in start(cli, B)  # not at a start either
    assert one.id in start(cli, A)
    assert prompt(cli, A) == []  # shown once (docs/hooks.md, "Each message once")
    two = claude.send("gemini@aaaa", "and this", "y")
    assert prompt(cli, B) == [] and prompt(cli, A) == [two.id]
    text = (root / "agents" / "gemini" / "new" / f"{one.id}.md").read_text()
    assert f"\ninstance: {A}\n" in text


def test_instance_mail_never_wakes_another_session(cli: Cli, root: Path) -> None:
    two_sessions(cli, root)
    configure(root, {"gemini": {"wake_on_mail": True, "wake_method": "claude-rewake"}})
    one = sender(root, "claude").send("gemini@bbbb2222", "only b", "x")
    delivery = Delivery(FileStore(root), "gemini", Identity("gemini", "--agent"))
    assert delivery.unannounced(A, "claude-rewake") == []
    assert [m.id for m in delivery.unannounced(B, "claude-rewake") or []] == [one.id]


def test_a_gone_ambiguous_or_too_short_instance_is_refused_and_nothing_sent(
        cli: Cli, root: Path) -> None:
    two_sessions(cli, root)
    start(cli, "aaaa9999-x")  # a third session sharing the prefix aaaa
    before = sorted(os.listdir(root / "agents" / "gemini" / "new"))
    for to, code, words in (("gemini@cccc", 1, "gemini has no running session cccc"),
                            ("gemini@aaaa", 2, "gemini@aaaa is ambiguous"),
                            ("gemini@aa", 2, "at least 4 characters"),
                            ("gemini@bbbb,claude", 2, "send it alone")):
        r = cli("--agent", "claude", "send", "--to", to, "--subject", "s", stdin="body")
        assert r.code == code and words in r.err, (to, r.err)
        assert len(r.err.strip().splitlines()) == 1
    age(root, B, 13 * HOUR)  # gone quiet: no longer an instance
    r = cli("--agent", "claude", "send", "--to", "gemini@bbbb", "--subject", "s",
            stdin="body")
    assert r.code == 1 and "no running session bbbb" in r.err
    assert sorted(os.listdir(root / "agents" / "gemini" / "new")) == before


def test_who_names_instances_by_their_shortest_unique_prefix(cli: Cli, root: Path) -> None:
    two_sessions(cli, root)
    start(cli, "aaaa1111-9")  # shares A's first 9 characters
    assert sorted(instances(cli)) == ["aaaa1111-0 (claude)", "aaaa1111-9 (claude)",
                                      "bbbb2222 (claude)"]
    assert "@bbbb2222 (claude)" in cli("who").out


def test_a_server_sees_its_own_instances_mail_and_its_host_s_hook_sessions(
        cli: Cli, root: Path) -> None:
    two_sessions(cli, root)
    claude = sender(root, "claude")
    for_a = claude.send("gemini@aaaa", "a", "x").id
    for_b = claude.send("gemini@bbbb", "b", "x").id
    host = json.loads((root / "hook-sessions" / "gemini" / A).read_text())["pid"]
    assert isinstance(host, int) and host > 1  # the hook's host process, from /proc
    b = root / "hook-sessions" / "gemini" / B  # session B runs in another host process
    b.write_text(json.dumps({**json.loads(b.read_text()), "pid": host + 1}))

    def server(session: str, host_pid: int) -> Mailbox:
        box = Mailbox(FileStore(root), Identity("gemini", "--agent"))
        box.session, box.host_pid = session, host_pid
        return box

    # A server started by session A's host speaks for A; another server for neither.
    listed = {i.message.id for i in server("srv1", host).inbox()}
    assert for_a in listed and for_b not in listed
    assert server("srv1", host).read(for_a, mark=False).message.id == for_a
    with pytest.raises(NotFound, match="for its session"):
        server("srv2", 1).read(for_a)
    other = {i.message.id for i in server("srv2", 1).inbox()}
    assert for_a not in other and for_b not in other
    # The CLI is no session: a person sees all of the mailbox, each with its instance.
    r = cli("--agent", "gemini", "--json", "inbox")
    found = {m["id"]: m.get("instance") for m in json.loads(r.out)}
    assert found[for_a] == A and found[for_b] == B


def test_mail_to_a_server_instance_reaches_that_server(root: Path) -> None:
    store = FileStore(root)
    now = datetime.now().astimezone()
    store.write_presence("gemini", "101", {"pid": os.getpid(), "hostname": hostname(),
                                            "program": "claude", "cwd": "/",
                                            "started": now.isoformat(),
                                            "heartbeat": now.isoformat(),
                                            "session": "5e5e5e5e"})
    one = sender(root, "claude").send("gemini@5e5e", "s", "x")
    assert one.instance == "5e5e5e5e"
    box = Mailbox(store, Identity("gemini", "--agent"))
    box.session, box.host_pid = "5e5e5e5e", 1
    assert [i.message.id for i in box.inbox()] == [one.id]
    with pytest.raises(Refused, match="no running session"):
        sender(root, "claude").send("gemini@6e6e", "s", "x")


def test_hook_output_for_another_instance_is_an_empty_object(cli: Cli, root: Path) -> None:
    two_sessions(cli, root)
    sender(root, "claude").send("gemini@aaaa", "only a", "x")
    r = cli("--agent", "gemini", "hook", "claude", "user-prompt-submit",
            stdin=payload("UserPromptSubmit", B, prompt="go"))
    assert shown(r) == [] and json.loads(r.out) == {}


# Through a real MCP server (stdio, the SDK's client) -----------------------------------
@pytest.mark.anyio
async def test_a_real_server_shows_its_host_s_instance_mail_and_its_own(
        root: Path, isolated: Path) -> None:
    from mcp import Client, StdioServerParameters

    from test_fencing import MAILSLOT

    store = FileStore(root)
    claude = sender(root, "claude")
    claude.send("gemini", "hello", "x", new=True)
    facts = {"host": "claude", "hostname": hostname(), "started": time.time()}
    store.record_hook_session("gemini", A, {**facts, "pid": os.getpid()})  # the server's host
    store.record_hook_session("gemini", B, {**facts, "pid": 1})  # another host process
    for_a = claude.send("gemini@aaaa", "for a", "x").id
    for_b = claude.send("gemini@bbbb", "for b", "x").id
    params = StdioServerParameters(command=MAILSLOT, args=["serve", "--agent", "gemini"],
                                   env={"MAILSLOT_DIR": str(root),
                                        "HOME": str(isolated / "home")})
    async with Client(params) as server:
        listed = await server.call_tool("read_messages", {})
        text = str(listed.structured_content or listed.content)
        assert for_a in text and for_b not in text
        refused = await server.call_tool("mark_done", {"message_ids": for_b, "state": "read"})
        assert refused.is_error
        sessions = (await server.call_tool("list_agents", {"sessions": True, "name": "gemini"})
                    ).structured_content or {}
        [own] = [s["session"] for s in sessions["sessions"] if s["kind"] == "server"]
        for_server = claude.send(f"gemini@{own[:6]}", "for the server", "x").id
        listed = await server.call_tool("read_messages", {})
        assert for_server in str(listed.structured_content or listed.content)
        gone = await server.call_tool("send_message", {"to": "claude@zzzz", "subject": "s",
                                                      "body": "b"})
        assert gone.is_error and "claude has no running session zzzz" in str(gone.content)


def test_a_channel_pushes_no_arrival_meant_for_another_session(cli: Cli, root: Path) -> None:
    from mailslot.service.arrivals import Arrivals

    two_sessions(cli, root)
    configure(root, {"gemini": {"wake_on_mail": True, "wake_method": "claude-channel"}})
    box = Mailbox(FileStore(root), Identity("gemini", "--agent"))
    box.session, box.host_pid = "srv1", 1  # a server no hook session belongs to
    arrivals = Arrivals(box, "claude-channel")
    claude = sender(root, "claude")
    claude.send("gemini@aaaa", "for a", "x")
    plain = claude.send("gemini", "for all", "x").id
    assert [m.id for m in arrivals.new()] == [plain]
