"""Search and threads through the service and the real CLI: only what the caller may
read, whole messages in their current state, nothing marked."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from mailslot import Mailbox
from mailslot.core.errors import InvalidInput, NotFound
from mailslot.keep import finding

Box = Callable[[str | None], Mailbox]


def subjects(items: list[Any]) -> list[str]:
    return [i.message.subject for i in items]


def test_search_covers_my_mail_and_broadcasts_only(box: Box) -> None:
    box("claude").send("gemini", "Migration for gemini", "details")
    box("claude").send("codex", "Migration for codex", "secret details")
    box("sarah").broadcast("Migration freeze", "everyone")
    found = finding.search(box("gemini"), "migration")
    assert sorted(subjects(found)) == ["Migration for gemini", "Migration freeze"]
    # what I sent is not searched (`sent` lists it; `thread` shows both sides)
    assert subjects(finding.search(box("claude"), "migration")) == ["Migration freeze"]
    assert finding.search(box("gemini"), "secret") == []


def test_nothing_is_marked_and_state_filters_apply(box: Box) -> None:
    one = box("claude").send("gemini", "alpha one", "x")
    two = box("claude").send("gemini", "alpha two", "x")
    box("gemini").done([one.id])
    gemini = box("gemini")
    assert {i.state for i in finding.search(gemini, "alpha")} == {"unread", "done"}
    assert [i.message.id for i in finding.search(gemini, "alpha", states=["unread"])] \
        == [two.id]
    assert gemini.read(two.id, mark=False).state == "unread"
    with pytest.raises(InvalidInput, match="unknown state"):
        finding.search(gemini, "alpha", states=["gone"])


def test_a_retracted_broadcast_is_not_found_by_agents_never_served_it(box: Box) -> None:
    news = box("sarah").broadcast("Freeze", "no deploys")
    assert subjects(finding.search(box("gemini"), "deploys")) == ["Freeze"]
    box("codex").read(news.id)
    box("sarah").retract(news.id)
    assert finding.search(box("gemini"), "deploys") == []
    assert subjects(finding.search(box("codex"), "deploys")) == ["Freeze"]


def test_filters_by_sender_recipient_dates_and_thread(box: Box) -> None:
    plan = box("claude").send("gemini", "plan", "release notes")
    box("codex").send("gemini", "other", "release party")
    reply = box("gemini").reply(plan.id, "ok")
    follow = box("claude").reply(reply.id, "release tomorrow")
    gemini = box("gemini")
    assert len(finding.search(gemini, "release")) == 3
    assert len(finding.search(gemini, "release", sender="claude")) == 2
    assert len(finding.search(gemini, "release", recipient="gemini")) == 3
    assert finding.search(gemini, "release", thread=plan.id[-8:]) != []
    assert {i.message.id for i in finding.search(gemini, "release", thread=plan.id)} \
        == {plan.id, follow.id}
    assert finding.search(gemini, "release", since="2999-01-01") == []
    assert len(finding.search(gemini, "release", until="2999-01-01")) == 3
    with pytest.raises(InvalidInput, match="--since must be a date"):
        finding.search(gemini, "release", since="yesterday")


def test_search_pages_past_hits_the_caller_may_not_see(box: Box) -> None:
    for n in range(30):
        box("claude").send("codex", f"needle {n}", "not gemini's")
    mine = box("claude").send("gemini", "needle mine", "x")
    assert [i.message.id for i in finding.search(box("gemini"), "needle", limit=1)] \
        == [mine.id]


def test_thread_in_order_with_states(box: Box) -> None:
    first = box("claude").send(["gemini", "codex"], "Plan", "one")
    answer = box("gemini").reply(first.id, "two")
    box("codex").reply(first.id, "codex's own answer")  # to claude, not to gemini
    third = box("claude").reply(answer.id, "three")
    entries = finding.thread(box("gemini"), third.id)
    assert [e.message.body for e in entries] == ["one", "two", "three"]
    assert [e.state for e in entries] == ["done", None, "unread"]
    assert {r.agent: r.state for r in entries[0].status.recipients} == {
        "gemini": "done", "codex": "done"}
    assert len(finding.thread(box("claude"), first.id)) == 4
    with pytest.raises(NotFound):
        finding.thread(box("sarah"), first.id)


def test_cli_search_thread_and_json(cli: Callable[..., Any], box: Box) -> None:
    sent = box("claude").send("gemini", "Schema change", "Column renamed.\nMore.")
    box("gemini").reply(sent.id, "Seen")
    out = cli("--agent", "gemini", "search", "schema")
    assert out.code == 0 and "Schema change" in out.out and "Column renamed." in out.out
    data = json.loads(cli("--agent", "gemini", "search", "schema", "--json").out)
    assert data[0]["id"] == sent.id and data[0]["body"] == "Column renamed.\nMore."
    assert data[0]["state"] == "done"
    assert cli("--agent", "gemini", "search", "nomatch").out.strip() == "no messages match"
    bad = cli("--agent", "gemini", "search", '"open')
    assert bad.code == 2 and bad.err.startswith("mailslot: error: a quoted phrase")
    shown = cli("--agent", "claude", "thread", sent.id[-8:])
    assert shown.code == 0 and shown.out.index("Column renamed") < shown.out.index("Seen")
    rows = json.loads(cli("--agent", "claude", "thread", sent.id, "--json").out)
    assert [r["state"] for r in rows] == [None, "unread"]
    assert rows[0]["recipients"][0]["state"] == "done"
    missing = cli("--agent", "claude", "thread", "2026-01-01_000000.000000_x_to_y_00000000")
    assert missing.code == 1
