"""Copying a store (``mailslot migrate``, a backup's records): the mail, then one loop
over every namespace marked ``copied``, the config and the logs, between any backends."""

from __future__ import annotations

from pathlib import Path

from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.keep.transfer import migrate
from mailslot.store import AgentRecord, Store, WakeEntry
from mailslot.store.namespaces import NAMESPACES
from mailslot.wake.claims import Queue, notifier_queue
from support import files_in

COPIED = sorted(name for name, space in NAMESPACES.items() if space.copied)


def _fill(store: Store) -> list[str]:
    """A record in every namespace a copy carries; the ids of the mail sent."""
    claude = Mailbox(store, Identity("claude", "--agent"))
    one = claude.send(["gemini", "codex"], "plan", "step one")
    two = claude.send("gemini", "second", "step two")
    news = claude.broadcast("freeze", "main is frozen")
    store.add_seen("gemini", [news.id])
    store.add_instance_mail("gemini", one.id, "s1")
    store.register_agent(AgentRecord("reviewer", "sha256:" + "0" * 64,
                                     created="2026-12-01T07:00:00+00:00"))
    store.set_accept("gemini", "members")
    store.set_member("gemini", "claude", True)
    store.set_request("gemini", "codex", two.id)
    store.add_passed("gemini", [one.id, two.id])
    store.set_accept("alice", "group:team")  # no mailbox, never registered
    store.set_member("+team", "codex", True)
    Queue(store).enqueue(WakeEntry(one.id, "gemini", attempt=2))
    notifier_queue(store, 3).enqueue(WakeEntry(two.id, "gemini"))
    store.log_session({"launcher": "codex", "prompt": "go ✓"})
    store.add("peers.node", (), {"key": "a2V5", "fingerprint": "SHA256:x"})
    store.put("peers.known", ("b",), {"key": "YmtleQ==", "roster": ["codex"]})
    store.add("peers.outbox", ("b", one.id), {"kind": "mail", "queued": 1.5})
    store.add("peers.sent", ("claude", one.id), {"message": "step one ✓"})
    store.add("peers.received", ("b", "0123456789abcdef"), {"at": 2.5})
    return [one.id, two.id, news.id]


def test_every_namespace_marked_copied_goes_to_any_backend_and_back(root: Path,
                                                                    tmp_path: Path) -> None:
    """Files → memory → files: every copied namespace holds the same records at each
    step, the counts name each namespace, and a second copy copies nothing."""
    source = open_store(str(root))
    _fill(source)
    assert all(source.items(name) for name in COPIED)  # the test fills every one
    copied, skipped = migrate(str(root), "memory://copy")
    assert skipped == []
    assert {k: v for k, v in copied.items() if k not in ("messages", "broadcasts")} == {
        "seen": 1, "instance mail": 1, "registrations": 1, "gates": 2, "members": 2,
        "requests": 1, "passed": 2, "wakes": 1, "notices": 1, "events": 3,
        "sessions started": 1, "node key": 1, "peers": 1, "for peers": 1,
        "sent to peers": 1, "envelopes taken": 1}
    assert migrate(str(root), "memory://copy") == ({}, [])  # idempotent
    back = tmp_path / "back"
    migrate("memory://copy", str(back))
    for store in (open_store("memory://copy"), open_store(str(back))):
        assert {n: store.items(n) for n in COPIED} == {n: source.items(n) for n in COPIED}
        assert store.load_config() == source.load_config()
        assert list(store.events()) == list(source.events())
    for place in ("registry", "gates/gemini/members", "gates/+team/members", "peers/known",
                  "peers/sent/claude"):
        assert files_in(back / place) == files_in(root / place)


def test_a_gate_is_carried_whether_its_agent_has_a_mailbox_or_not(root: Path,
                                                                 tmp_path: Path) -> None:
    """An inbox gated before its agent ever got mail (a group's founder sets its gate
    first) keeps its gate in the copy: the copy is of every gate, not of the agents
    the source happens to hold mail for."""
    source = open_store(str(root))
    source.set_accept("alice", "group:team")
    source.set_member("+team", "codex", True)
    copied, _ = migrate(str(root), str(tmp_path / "copy"))
    target = open_store(str(tmp_path / "copy"))
    assert target.accept_of("alice") == "group:team" and target.members("+team") == ["codex"]
    assert copied["gates"] == 1
