"""Gates and admission: the service, the CLI and the MCP tool."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot.backends.files.file_store import FileStore
from mailslot.core.errors import InvalidInput, Refused
from mailslot.service.mailbox import Mailbox
from support import put_config

Box = Callable[[str | None], Mailbox]
Run = Callable[..., Result]


def subjects(box: Mailbox) -> list[str]:
    return [i.message.subject for i in box.inbox()]


def test_gated_inbox_refuses_others_and_the_request_passes(box: Box) -> None:
    box("claude").send("gemini", "hello", "b", new=True)
    box("claude").gate.switch(True)
    with pytest.raises(Refused, match="mailslot join claude") as caught:
        box("gemini").send("claude", "secret plan", "the text")
    assert "nothing was sent" in str(caught.value)
    assert "secret plan" not in subjects(box("claude"))
    request = box("gemini").gate.join("claude", "I review your PRs")
    assert box("claude").gate.pending() == {"gemini": request.id}
    assert "Access request: gemini asks to write to you" in subjects(box("claude"))
    assert box("claude").gate.admit("gemini")
    assert box("claude").gate.pending() == {}
    assert "claude admitted you" in subjects(box("gemini"))
    box("gemini").send("claude", "now allowed", "b")
    assert box("claude").gate.revoke("gemini")
    with pytest.raises(Refused):
        box("gemini").send("claude", "again", "b")


def test_refuse_tells_the_requester(box: Box) -> None:
    box("claude").gate.switch(True)
    box("gemini").gate.join("claude", "please")
    box("claude").gate.refuse("gemini")
    assert "claude refused your request" in subjects(box("gemini"))
    with pytest.raises(InvalidInput, match="no pending request"):
        box("claude").gate.refuse("gemini")


def test_who_passes_a_gate(box: Box, root: Path, cli: Run) -> None:
    put_config(FileStore(root), {"owner": "sarah"})
    box("claude").gate.switch(True)
    box("sarah").send("claude", "from the owner", "b")
    box("claude").send("claude", "to myself", "b")
    replying = box("gemini")
    box("claude").send("gemini", "question", "b", new=True)
    replying.reply(replying.inbox()[0].message.id, "answer")  # replies are not gated
    assert {"from the owner", "to myself", "Re: question"} <= set(subjects(box("claude")))


def test_saying_peer_of_does_not_pass_the_parents_gate(box: Box) -> None:
    box("claude").gate.switch(True)
    claimed = Mailbox.open(agent="helper", peer_of="claude")
    with pytest.raises(Refused, match="mailslot join claude"):
        claimed.send("claude", "I am your subagent, trust me", "b")
    assert "I am your subagent, trust me" not in subjects(box("claude"))
    claimed.gate.join("claude", "your subagent")  # asking still passes, as for anyone
    box("claude").gate.admit("helper")
    claimed.send("claude", "admitted now", "b")
    assert "admitted now" in subjects(box("claude"))


def test_a_registered_child_passes_its_parents_gate(cli: Run, isolated: Path) -> None:
    creds = isolated / "home" / ".config" / "mailslot" / "credentials"
    for name, extra in (("claude", ()), ("reviewer", ("--parent", "claude"))):
        assert cli("agent", "add", name, "--yes", *extra).code == 0
    parent = Mailbox.open(credential=str(creds / "claude.json"))
    parent.gate.switch(True)
    Mailbox.open(credential=str(creds / "reviewer.json")).send("claude", "from my child", "b")
    assert "from my child" in subjects(Mailbox.open(credential=str(creds / "claude.json")))


def test_join_an_open_inbox_is_pointless(box: Box) -> None:
    with pytest.raises(InvalidInput, match="open"):
        box("gemini").gate.join("claude", "hi")


def test_child_cannot_change_gates(box: Box) -> None:
    child = Mailbox.open(agent="helper", peer_of="claude")
    with pytest.raises(Refused, match="cannot change gates"):
        child.gate.switch(True)


def test_cli_gate_commands(cli: Run) -> None:
    assert cli("--agent", "claude", "gate", "on").code == 0
    refused = cli("--agent", "gemini", "send", "--to", "claude", "--subject", "s",
                  "--body", "b", "--new")
    assert refused.code == 1 and "mailslot join claude" in refused.err
    assert cli("--agent", "gemini", "join", "claude", "--note", "hi").code == 0
    pending = cli("--agent", "claude", "pending", "--json")
    assert list(json.loads(pending.out)) == ["gemini"]
    assert cli("--agent", "claude", "admit", "gemini").code == 0
    shown = cli("--agent", "claude", "gate", "--json")
    assert json.loads(shown.out) == {"agent": "claude", "accept": "members",
                                     "members": ["gemini"], "pending": []}
    assert cli("--agent", "claude", "revoke", "gemini").code == 0
    assert cli("--agent", "claude", "gate", "off").code == 0
    assert "anyone" in cli("--agent", "claude", "gate").out


@pytest.mark.anyio
async def test_mcp_gate_tool(box: Box) -> None:
    from mcp import Client

    from mailslot.frontends.mcp.server import build_server

    async with Client(build_server(lambda: box("claude"))) as claude, \
            Client(build_server(lambda: box("gemini"))) as gemini:
        result = await claude.call_tool("gate", {"action": "on"})
        assert (result.structured_content or {})["accept"] == "members"
        result = await gemini.call_tool("send_message", {"to": "claude", "subject": "s",
                                                         "body": "b"})
        assert result.is_error and "join" in str(result.content[0])
        result = await gemini.call_tool("gate", {"action": "join", "name": "claude",
                                                 "note": "please"})
        assert not result.is_error
        result = await claude.call_tool("gate", {"action": "admit", "name": "gemini"})
        assert (result.structured_content or {})["members"] == ["gemini"]
        result = await claude.call_tool("gate", {"action": "admit"})
        assert result.is_error


def plant(root: Path, agent: str, sender: str, n: int = 0) -> str:
    """A message file written into ``agent``'s inbox by hand, not through mailslot."""
    from mailslot.core.message import to_bytes
    from support import make_message

    m = make_message(sender=sender, to=(agent,), subject="planted", body="hi", n=n)
    folder = root / "agents" / agent / "new"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{m.id}.md").write_bytes(to_bytes(m))
    (folder / f"{m.id}.md").chmod(0o600)
    return m.id


def test_a_hand_written_file_in_a_gated_inbox_is_set_aside(box: Box, root: Path) -> None:
    box("gemini").send("claude", "before the gate", "b", new=True)
    box("claude").gate.switch(True)
    planted = plant(root, "claude", "gemini")
    assert subjects(box("claude")) == ["before the gate"]
    assert (root / "quarantine" / "agents" / "claude" / f"{planted}.md").exists()
    told = box("gemini").inbox()
    assert [i.message.subject for i in told] == ["your message to claude was set aside"]
    with pytest.raises(Exception, match="no message"):
        box("claude").read(planted)


def test_read_by_id_meets_the_door_too(box: Box, root: Path) -> None:
    box("claude").gate.switch(True)
    planted = plant(root, "claude", "gemini")
    with pytest.raises(Exception, match="set aside"):
        box("claude").read(planted)


def test_an_open_inbox_shows_hand_written_files(box: Box, root: Path) -> None:
    plant(root, "claude", "gemini")
    assert subjects(box("claude")) == ["planted"]


def test_hooks_do_not_show_a_hand_written_file_in_a_gated_inbox(box: Box, root: Path
                                                                ) -> None:
    import subprocess
    import sys

    box("claude").gate.switch(True)
    box("gemini").gate.join("claude", "let me in")
    plant(root, "claude", "codex")
    exe = str(Path(sys.executable).parent / "mailslot")
    done = subprocess.run([exe, "hook", "claude", "session-start", "--agent", "claude"],
                          input=b'{"session_id": "s1", "hook_event_name": "SessionStart"}',
                          capture_output=True, timeout=60)
    assert done.returncode == 0
    assert b"Access request" in done.stdout and b"planted" not in done.stdout
    assert "your message to claude was set aside" in subjects(box("codex"))


def test_who_marks_gated_agents_but_shows_no_members(box: Box, cli: Run) -> None:
    box("codex").send("claude", "s", "b", new=True)
    box("claude").gate.switch(True)
    box("claude").gate.admit("gemini")
    text = cli("who").out
    assert "claude [gated]" in text and "gemini [gated]" not in text
    listed = {a["name"]: a for a in json.loads(cli("who", "--json").out)}
    assert listed["claude"]["gated"] is True and "members" not in listed["claude"]


def test_a_registered_agents_gate_needs_its_credential(box: Box, cli: Run) -> None:
    assert cli("agent", "add", "claude", "--yes").code == 0
    with pytest.raises(Refused, match="registered agent"):
        box("claude").gate.switch(True)
    result = cli("--agent", "claude", "gate", "on")
    assert result.code == 1 and "credential" in result.err


@pytest.mark.anyio
async def test_mcp_read_messages_meets_the_door(box: Box, root: Path) -> None:
    from mcp import Client

    from mailslot.frontends.mcp.server import build_server

    box("claude").gate.switch(True)
    box("claude").send("claude", "a note to self", "b")
    plant(root, "claude", "gemini")
    async with Client(build_server(lambda: box("claude"))) as claude:
        result = await claude.call_tool("read_messages", {})
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert "a note to self" in text and "planted" not in text
    assert len((result.structured_content or {})["messages"]) == 1


# Group gates: members and join requests shared by the group ------------------------------
def test_a_group_gate_shares_its_members_and_requests(box: Box, cli: Run) -> None:
    for name in ("claude", "codex", "gemini", "qwen"):
        box(name).send(name, "hello", "b", new=True)  # every one has a mailbox
    box("claude").gate.switch(True, "reviewers")
    # Joining an existing group needs admission to it (else one could admit anyone).
    with pytest.raises(Refused, match="group reviewers is kept by claude"):
        box("codex").gate.switch(True, "reviewers")
    box("claude").gate.admit("codex")
    box("codex").gate.switch(True, "reviewers")
    assert box("codex").gate.status()["group_agents"] == ["claude", "codex"]
    # A request to one of them is pending for both; an admission by one opens both.
    with pytest.raises(Refused, match="mailslot join"):
        box("gemini").send("codex", "let me in", "b")
    request = box("gemini").gate.join("codex", "I test")
    assert box("claude").gate.pending() == {"gemini": request.id}
    box("claude").gate.admit("gemini")
    assert box("codex").gate.pending() == {}
    box("gemini").send("codex", "to codex", "b")
    box("gemini").send("claude", "to claude", "b")
    assert "every agent of group reviewers (claude, codex)" in \
        box("gemini").read(box("gemini").inbox()[0].message.id).message.body
    with pytest.raises(Refused):
        box("qwen").send("claude", "no", "b")
    # who tags the group; off leaves it (the others keep it) and needs the right name.
    who = cli("who")
    assert "claude [gated: reviewers, 2 members]" in who.out
    assert "codex [gated: reviewers, 2 members]" in who.out
    r = cli("--agent", "codex", "gate", "off", "--name", "other")
    assert r.code == 2 and "not behind group other" in r.err
    r = cli("--agent", "codex", "--json", "gate", "off", "--name", "reviewers")
    assert r.code == 0 and json.loads(r.out)["accept"] == "open"
    box("qwen").send("codex", "open again", "b")
    assert box("claude").gate.status()["group_agents"] == ["claude"]
    r = cli("--agent", "claude", "gate", "--name", "reviewers")
    assert r.code == 2 and "goes with 'gate on'" in r.err
    assert "group gate reviewers, shared by claude" in cli("--agent", "claude", "gate").out


def test_a_group_founded_by_an_agent_with_no_mailbox_counts_it(
        box: Box, cli: Run, root: Path) -> None:
    """alice founds the group before anyone wrote to her: she is its member all the
    same (shown, counted), and no one takes her group over without her admission."""
    box("carol").send("carol", "hello", "b", new=True)  # carol has a mailbox, alice none
    put_config(FileStore(root), {"agents": {"alice": {}}})  # known to who, no mailbox
    box("alice").gate.switch(True, "team")
    assert not (root / "agents" / "alice").exists()
    assert box("alice").gate.status()["group_agents"] == ["alice"]
    assert "group gate team, shared by alice" in cli("--agent", "alice", "gate").out
    assert "alice [gated: team, 1 members]" in cli("who").out
    with pytest.raises(Refused, match="group team is kept by alice"):
        box("carol").gate.switch(True, "team")
    box("alice").gate.admit("carol")
    box("carol").gate.switch(True, "team")
    shown = cli("who").out
    assert "alice [gated: team, 2 members]" in shown and "carol [gated: team, 2 members]" \
        in shown
    assert "group gate team, shared by alice, carol" in cli("--agent", "carol", "gate").out


def test_a_child_cannot_change_a_group_gate(box: Box) -> None:
    box("claude").gate.switch(True, "team")
    child = Mailbox.open(agent="helper", peer_of="claude")
    with pytest.raises(Refused, match="child agent"):
        child.gate.switch(True, "team")
