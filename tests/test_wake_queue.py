"""The wake queue: what delivery queues, and the store's claim-by-rename rules."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot import FileStore, Mailbox
from mailslot.core.errors import UnsafePath
from mailslot.store import WakeEntry
from mailslot.wake.claims import Queue
from wake_helpers import configure, events

Box = Callable[[str | None], Mailbox]
MID = "2026-01-01_000000.000000_claude_to_gemini_hi_abcdef"
COMMAND = {"wake_method": "command", "command": ["true"]}


def queued(root: Path, agent: str) -> list[str]:
    return sorted(e.message_id for e in Queue(FileStore(root)).pending(agent))


def inbox_subjects(box: Box, agent: str) -> list[str]:
    return [i.message.subject for i in box(agent).inbox()]


# What delivery queues ---------------------------------------------------------------
def test_opted_in_recipient_gets_one_wake_per_message(box: Box, root: Path) -> None:
    configure(root, {"gemini": {"wake_on_mail": True, **COMMAND}})
    m = box("claude").send(["gemini", "codex"], "Schema", "secret body")
    assert queued(root, "gemini") == [m.id]
    assert queued(root, "codex") == []  # not opted in: nothing queued
    assert [(e["event"], e["agent"]) for e in events(root)] == [("wake_queued", "gemini")]


def test_requested_only_wakes_for_send_with_wake(box: Box, root: Path) -> None:
    configure(root, {"gemini": {"wake_on_mail": "requested", **COMMAND}})
    box("claude").send("gemini", "plain", "x")
    asked = box("claude").send("gemini", "urgent", "x", wake=True)
    assert queued(root, "gemini") == [asked.id]


def test_replies_queue_wakes_too(box: Box, root: Path) -> None:
    configure(root, {"claude": {"wake_on_mail": True, **COMMAND}})
    m = box("claude").send("gemini", "question", "x")
    reply = box("gemini").reply(m.id, "answer")
    assert queued(root, "claude") == [reply.id]


def test_no_wake_for_broadcasts_mail_to_oneself_or_mailslot_notices(box: Box, root: Path) -> None:
    configure(root, {"claude": {"wake_on_mail": True, **COMMAND},
                     "gemini": {"wake_on_mail": True, **COMMAND}})
    box("claude").broadcast("freeze", "x")
    box("claude").send("claude", "note to self", "x")
    box("gemini").notifier().tell("claude", "notice", "x")
    assert Queue(FileStore(root)).agents() == []


def test_asking_for_a_wake_that_is_not_allowed_tells_the_sender_at_once(
        box: Box, root: Path) -> None:
    configure(root, {"claude": {"wake_on_mail": False}})
    m = box("sarah").send("claude", "Private subject", "secret body", wake=True)
    assert inbox_subjects(box, "claude") == ["Private subject"]  # delivered regardless
    notice = box("sarah").inbox()[0].message
    assert notice.sender == "mailslot" and notice.subject == "claude will not be woken"
    body = box("sarah").read(notice.id).message.body
    assert m.id in body and "agents.claude.wake_on_mail" in body
    assert "Private subject" not in body and "secret body" not in body
    assert events(root)[0]["event"] == "wake_skipped"


def test_unsupported_host_asked_for_a_wake_tells_the_sender(box: Box, root: Path) -> None:
    configure(root, {"claude": {"wake_on_mail": True, "wake_method": "unsupported"}})
    box("sarah").send("claude", "s", "x")
    assert box("sarah").inbox() == []  # not asked: logged, nobody told
    assert [e["event"] for e in events(root)] == ["wake_skipped"]
    box("sarah").send("claude", "s", "x", wake=True)
    assert "cannot be woken" in box("sarah").read(box("sarah").inbox()[0].message.id).message.body


def test_malformed_wake_config_fails_closed_but_still_delivers(box: Box, root: Path) -> None:
    configure(root, {"gemini": {"wake_on_mail": "yes", **COMMAND}})
    box("claude").send("gemini", "s", "x", wake=True)
    assert inbox_subjects(box, "gemini") == ["s"]
    assert queued(root, "gemini") == []
    assert "agents.gemini.wake_on_mail" in events(root)[0]["reason"]
    assert "agents.gemini.wake_on_mail" in box("claude").read(
        box("claude").inbox()[0].message.id).message.body


def test_a_notice_cannot_be_sent_as_mailslot_by_an_agent(cli: Callable[..., Result]) -> None:
    r = cli("--agent", "mailslot", "send", "--to", "gemini", "--subject", "s", "--body", "x")
    assert r.code == 2 and "reserved" in r.err


# The store's queue ------------------------------------------------------------------
def test_enqueue_never_overwrites(root: Path) -> None:
    store = FileStore(root)
    assert Queue(store).enqueue(WakeEntry(MID, "gemini", 1, 10.0))
    assert not Queue(store).enqueue(WakeEntry(MID, "gemini", 2, 99.0))
    assert Queue(store).pending("gemini") == [WakeEntry(MID, "gemini", 1, 10.0)]
    assert (root / "wake" / "pending" / "gemini" / MID).stat().st_mode & 0o777 == 0o600


def test_claim_is_won_by_exactly_one_of_many(root: Path) -> None:
    store = FileStore(root)
    ids = [MID.replace("abcdef", f"{n:06x}") for n in range(40)]
    for i in ids:
        Queue(store).enqueue(WakeEntry(i, "gemini"))
    won: list[str] = []
    start = threading.Barrier(8)

    def claimer() -> None:
        start.wait()
        for i in ids:
            claimed = Queue(FileStore(root)).claim(WakeEntry(i, "gemini"))
            if claimed is not None:
                won.append(claimed.message_id)

    threads = [threading.Thread(target=claimer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == sorted(ids)
    assert Queue(store).pending("gemini") == []


def test_release_with_retry_requeues_before_dropping_the_claim(root: Path) -> None:
    store = FileStore(root)
    Queue(store).enqueue(WakeEntry(MID, "gemini"))
    claimed = Queue(store).claim(WakeEntry(MID, "gemini"))
    assert claimed is not None and claimed.claim == f"{MID}.{os.getpid()}"
    assert Queue(store).agents() == ["gemini"]  # a claim still counts as work
    Queue(store).release(claimed, WakeEntry(MID, "gemini", 2, 123.5))
    assert Queue(store).pending("gemini") == [WakeEntry(MID, "gemini", 2, 123.5)]
    assert Queue(store).orphans("gemini") == []


def test_lock_is_exclusive_and_claims_under_it_are_orphans(root: Path) -> None:
    store = FileStore(root)
    Queue(store).enqueue(WakeEntry(MID, "gemini"))
    assert Queue(store).claim(WakeEntry(MID, "gemini")) is not None
    with Queue(store).lock("gemini") as held:
        assert held
        with Queue(FileStore(root)).lock("gemini") as other:
            assert not other
        assert [o.message_id for o in Queue(store).orphans("gemini")] == [MID]
    with Queue(FileStore(root)).lock("gemini") as again:
        assert again


def test_queue_refuses_names_that_are_not_agents_or_ids(root: Path) -> None:
    store = FileStore(root)
    with pytest.raises(UnsafePath):
        Queue(store).enqueue(WakeEntry(MID, "../x"))
    with pytest.raises(UnsafePath):
        Queue(store).enqueue(WakeEntry("../../etc/passwd", "gemini"))


def test_planted_symlink_in_the_queue_is_not_followed(root: Path, tmp_path: Path) -> None:
    store = FileStore(root)
    Queue(store).enqueue(WakeEntry(MID, "gemini"))
    target = tmp_path / "elsewhere"
    target.write_text("{}")
    other = MID.replace("abcdef", "fedcba")
    (root / "wake" / "pending" / "gemini" / other).symlink_to(target)
    with pytest.raises(UnsafePath):
        Queue(store).claim(WakeEntry(other, "gemini"))
