"""The store in memory: opened by ``memory://NAME``, one mailbox per name in a process,
the primitives alone under every method the service uses."""

from __future__ import annotations

import pytest

from mailslot import InvalidInput, Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.core.query import Search, parse
from support import make_message


def test_a_name_is_one_mailbox_in_this_process_and_names_are_apart() -> None:
    first, again = open_store("memory://team"), open_store("memory://team")
    other, unnamed = open_store("memory://elsewhere"), open_store("memory://")
    m = make_message()
    first.deliver(m, ["gemini"])
    assert again.entries("gemini", ["unread"]) == [(m.id, "unread")]
    assert other.agent_names() == [] and unnamed.agent_names() == []
    assert open_store("memory://").agent_names() == []  # each unnamed one is its own
    assert (first.kind, first.folder, first.location) == ("memory", None, "memory://team")


def test_the_service_runs_on_it_end_to_end() -> None:
    """Send, read, reply, done, broadcast, status and search: what the service needs of
    a store is the primitives and what the base class builds on them."""
    store = open_store("memory://service")
    claude = Mailbox(store, Identity("claude", "--agent"))
    gemini = Mailbox(store, Identity("gemini", "--agent"))
    sent = claude.send("gemini", "Deploy plan", "We deploy on Friday.", new=True)
    news = claude.broadcast("Freeze", "no deploys")
    assert sorted(i.message.id for i in gemini.inbox()) == sorted([sent.id, news.id])
    gemini.read(sent.id)
    answer = gemini.reply(sent.id, "Friday works")
    assert store.state_of("gemini", sent.id) == "done"  # a reply marks it done
    assert [r.state for r in claude.status(sent.id).recipients] == ["done"]
    found = store.search(Search(match=parse("friday"), reader="claude", sent=True))
    assert found == [answer.id, sent.id]  # as good a match: the newest first
    assert store.count_done("gemini") == 1 and store.correspondents("gemini") == {"claude"}
    assert store.sent_ids("claude") == [news.id, sent.id]


def test_a_scheme_mailslot_does_not_know_is_still_refused() -> None:
    with pytest.raises(InvalidInput, match="ftp:// stores are not supported"):
        open_store("ftp://nowhere")
