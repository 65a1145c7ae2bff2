"""What the web page reads (``mailslot.service.browse``): any mailbox, unmarked; threads;
arrivals."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import FileStore, Mailbox
from mailslot.core.config import Config
from mailslot.core.errors import NoIdentity
from mailslot.service.browse import (
    agents,
    arrivals,
    listing,
    owner_mailbox,
    show,
    snapshot,
    thread,
    wake_log,
    wake_view,
)
from support import put_config

Box = Callable[[str | None], Mailbox]


def test_show_reads_any_mailbox_whole_and_marks_nothing(box: Box, root: Path) -> None:
    sent = box("claude").send("gemini", "hello", "the body")
    shown = show(box(None), sent.id[-8:])
    assert (shown.message.body, shown.owner_state) == ("the body", None)
    assert [(r.agent, r.state) for r in shown.status.recipients] == [("gemini", "unread")]
    assert FileStore(root).state_of("gemini", sent.id) == "unread"


def test_a_thread_is_every_message_naming_its_first_in_order(box: Box, root: Path) -> None:
    first = box("claude").send("gemini", "q", "question")
    box("codex").send("gemini", "other", "not in it")
    answer = box("gemini").reply(first.id, "answer")
    last = box("claude").reply(answer.id, "thanks")
    store = FileStore(root)
    for start in (first, answer, last):
        found = thread(store, start, bodies=True)
        assert [m.id for m in found] == [first.id, answer.id, last.id]
        assert [m.body for m in found] == ["question", "answer", "thanks"]


def test_listing_by_state_and_counts(box: Box, root: Path) -> None:
    ids = [box("claude").send("gemini", f"s{n}", "b").id for n in range(3)]
    box("gemini").done([ids[0]])
    store = FileStore(root)
    unread = listing(store, "gemini", "unread", limit=1)
    assert [m.id for m in unread.messages] == [ids[2]] and unread.more == 1
    assert unread.counts == {"unread": 2, "read": 0, "done": 1}
    assert [m.id for m in listing(store, "gemini", "done").messages] == [ids[0]]


def test_arrivals_name_each_new_message_once(box: Box, root: Path) -> None:
    store = FileStore(root)
    before = snapshot(store)
    sent = box("claude").send(["gemini", "codex"], "both", "b", new=True)
    cast = box("codex").broadcast("all hands", "b")
    news = arrivals(store, before, snapshot(store))
    assert [(a["id"], a["subject"]) for a in news] == [(sent.id, "both"), (cast.id, "all hands")]
    box("gemini").done([sent.id])
    assert arrivals(store, snapshot(store), snapshot(store)) == []


def test_the_owner_speaks_only_when_the_config_names_one(box: Box, root: Path) -> None:
    store = FileStore(root)
    with pytest.raises(NoIdentity, match="owner"):
        owner_mailbox(store)
    put_config(store, {"owner": "sarah"})
    assert owner_mailbox(store).send("gemini", "hi", "b", new=True).sender == "sarah"


def test_the_wake_switch_says_why_it_cannot_be_turned_on(box: Box, root: Path) -> None:
    config = Config({"agents": {"claude": {"wake_method": "unsupported"},
                                "codex": {"wake_on_mail": "sometimes"},
                                "gemini": {"wake_on_mail": True, "wake_method": "tmux"}}})
    assert not wake_view(config, "claude").can_wake
    assert "cannot be woken" in wake_view(config, "claude").why_not
    assert "wake_on_mail" in wake_view(config, "codex").why_not
    assert wake_view(config, "gemini").on and wake_view(config, "gemini").can_wake
    put_config(FileStore(root), config.raw)
    box("claude").send("gemini", "x", "y")
    rows = {r.info.name: r for r in agents(box(None))}
    assert rows["gemini"].counts["unread"] == 1 and not rows["claude"].wake.can_wake
    assert [e["event"] for e in wake_log(FileStore(root))] == ["wake_queued"]
