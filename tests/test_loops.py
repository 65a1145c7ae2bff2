"""Loops by cause and cost: hops follow the mail each agent had just been given, not
only reply chains, so a ping-pong of plain sends and a ring of three agents (each
reading the newest mail before it sends) stop at the hop limit; the owner's word starts
the count again; budgets count bytes put into context and turns woken per agent and
per conversation; an ack wakes nobody; the owner hears once when a loop is stopped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mailslot import FileStore, Mailbox
from mailslot.backends import open_store
from mailslot.core.config import Config
from mailslot.core.errors import InvalidInput, Throttled
from mailslot.mail.causes import CAUSE_WINDOW, content_free
from mailslot.store import Store
from support import put_config, run_cli
from test_governor import OWNER, Clock, agents

WAKE = {"wake_on_mail": True, "wake_method": "command", "command": ["true"]}


@pytest.fixture
def store() -> Store:
    """A mailbox in memory: the governor's rules are the same over every backend."""
    made = open_store("memory://")
    put_config(made, {"owner": OWNER})
    return made


@pytest.fixture
def files(root: Path) -> FileStore:
    """A mailbox on disk, for what a command of its own reads."""
    made = FileStore(root)
    put_config(made, {"owner": OWNER})
    return made


def read_then_send(boxes: dict[str, Mailbox], clock: Clock, to: dict[str, str] | None = None,
                   *, most: int = 400) -> tuple[int, list[str]]:
    """Each agent in turn reads the newest mail it has (marking it read), then sends a
    new message (no reply) to the next agent of ``to`` (default: back to the sender),
    and marks what it had done: a loop no reply chain links. How many were sent, and
    the refusals."""
    sent, refusals = 0, []
    while sent < most:
        moved = False
        for name, box in boxes.items():
            waiting = [i.message for i in box.inbox(unread_only=True, limit=50)]
            agents_mail = [m for m in waiting if m.sender != "mailslot"]
            if not agents_mail:
                continue
            newest = agents_mail[0]
            clock.tick()
            box.read(newest.id)
            try:
                box.send((to or {}).get(name, newest.sender), "answer", f"answer {sent}")
            except Throttled as exc:
                refusals.append(str(exc))
            else:
                sent += 1
            box.done([m.id for m in agents_mail])
            moved = True
        if not moved:
            return sent, refusals
    raise AssertionError(f"the loop was not stopped after {most} messages")


def notices(store: Store, agent: str) -> list[str]:
    return [store.load(agent, i)[0].body for i, _ in store.entries(agent, ("unread",))
            if "_mailslot_to_" in i]


def test_a_plain_send_ping_pong_is_stopped_by_the_hop_limit(store: Store) -> None:
    clock = Clock(step=90)  # slow: no bucket ever runs dry
    boxes = agents(store, clock, "claude", "gemini")
    first = boxes["claude"].send("gemini", "Review", "please look", new=True)
    sent, refusals = read_then_send(boxes, clock)
    assert sent == 39  # with the first, 40 in a row from agents: the hop limit
    assert len(refusals) == 1
    assert "would be message 41 in a row between agents along the mail" in refusals[0]
    assert "governor.hop_limit 40" in refusals[0]
    chain = store.load("claude", store.entries("claude", ("done",))[-1][0])[0]
    assert chain.cause is not None  # each message names what its sender had just read
    told = notices(store, OWNER)
    assert len(told) == 1 and "claude, gemini" in told[0] and first.id in told[0]
    assert "40 messages" in told[0] and "bytes put into models' context" in told[0]


def test_a_ring_of_three_agents_is_stopped_by_the_hop_limit(store: Store) -> None:
    clock = Clock(step=90)
    boxes = agents(store, clock, "planner", "builder", "tester")
    ring = {"planner": "builder", "builder": "tester", "tester": "planner"}
    boxes["planner"].send("builder", "Plan", "go", new=True)
    sent, refusals = read_then_send(boxes, clock, ring)
    assert sent + 1 <= 45 and len(refusals) == 1
    assert "would be message 41 in a row" in refusals[0]
    assert len(notices(store, OWNER)) == 1


def test_the_owners_word_starts_the_count_again(store: Store) -> None:
    put_config(store, {"owner": OWNER, "governor": {"hop_limit": 5}})
    clock = Clock(step=90)
    boxes = agents(store, clock, OWNER, "claude", "gemini")
    boxes["claude"].send("gemini", "Review", "please look", new=True)
    loop = {"claude": boxes["claude"], "gemini": boxes["gemini"]}
    sent, refusals = read_then_send(loop, clock)
    assert (sent, len(refusals)) == (4, 1)
    clock.tick()
    boxes[OWNER].send("gemini", "Go on", "keep going")  # the owner writes in it
    sent, refusals = read_then_send(loop, clock, {"gemini": "claude", "claude": "gemini"})
    assert (sent, len(refusals)) == (5, 1)  # five more from the owner's message on
    assert len(notices(store, OWNER)) == 2  # one notice for each conversation stopped


def test_mail_given_long_before_is_no_cause(store: Store) -> None:
    clock = Clock(step=1)
    boxes = agents(store, clock, "claude", "gemini")
    first = boxes["claude"].send("gemini", "Review", "please look", new=True)
    boxes["gemini"].read(first.id)
    clock.now += timedelta(seconds=CAUSE_WINDOW + 1)
    assert boxes["gemini"].send("claude", "Later", "unrelated").cause is None
    boxes["gemini"].read(first.id)  # read already: no new receipt, still no cause
    again = boxes["claude"].send("gemini", "More", "x")
    boxes["gemini"].read(again.id)
    assert boxes["gemini"].send("claude", "Re", "x").cause == again.id


def test_an_ack_is_delivered_and_wakes_nobody(store: Store) -> None:
    put_config(store, {"owner": OWNER, "agents": {"gemini": WAKE, "claude": WAKE}})
    clock = Clock(step=1)
    boxes = agents(store, clock, "claude", "gemini")
    ask = boxes["claude"].send("gemini", "Review", "please look", wake=True)
    thanks = boxes["gemini"].reply(ask.id, "Thanks a lot! 👍")  # content-free: an ack
    said = boxes["gemini"].send("claude", "Noted", "", ack=True, wake=True)  # asked for
    plain = boxes["gemini"].send("claude", "Status", "thanks, and the build is red")
    assert (thanks.ack, said.ack, plain.ack) == (True, True, False)
    queued = {e["id"] for e in store.events() if e["event"] == "wake_queued"}
    assert queued == {ask.id, plain.id}
    skipped = [e for e in store.events() if e["event"] == "wake_skipped"]
    assert [(e["id"], e["reason"]) for e in skipped] == [(said.id, "an ack wakes nobody")]
    assert store.load("claude", thanks.id)[0].ack  # the header says so, for every reader
    with pytest.raises(InvalidInput, match="an ack asks for no reply"):
        boxes["gemini"].send("claude", "x", "y", ack=True, expect_reply=True)


def test_an_ack_is_framed_as_one_and_the_cli_takes_ack(files: Store, root: Path) -> None:
    boxes = agents(files, Clock(step=1), "claude", "gemini")
    ask = boxes["claude"].send("gemini", "Review", "please look")
    done = run_cli("--dir", str(root), "--agent", "gemini", "reply", ask.id, "--ack",
                   "--body", "Merged as asked, nothing else to say", "--json")
    assert done.returncode == 0, done.stderr
    shown = boxes["claude"].read_page(None, unread_only=True, limit=5)[0]
    assert shown[0].message.ack
    from mailslot.core.framing import frame

    assert "kind: an ack (it only acknowledges; do not answer it)" in frame(shown[0].message)


@pytest.mark.parametrize(("text", "ack"), [
    ("Thanks!", True), ("thank you 🙏", True), ("Got it, cheers", True), ("Noted.", True),
    ("Thanks a lot, great!", True), ("ok", False), ("yes", False), ("done", False),
    ("Thanks, but the tests fail on main", False), ("", False),
    ("thanks " * 20, False),
])
def test_what_is_content_free(text: str, ack: bool) -> None:
    assert content_free(text) is ack


def test_bytes_put_into_context_are_budgeted_per_agent(store: Store) -> None:
    put_config(store, {"owner": OWNER, "governor": {"agent_bytes_per_hour": 40_000}})
    clock = Clock(step=1)
    boxes = agents(store, clock, "claude", "gemini", "codex")
    body = "x" * 3000
    sent = 0
    with pytest.raises(Throttled, match=r"too many bytes from claude into other agents' "
                                        r"context \(config.json governor.agent_bytes_per_hour"):
        for _ in range(10):
            clock.tick()
            boxes["claude"].send(["gemini", "codex"], "Log", body, new=True)
            sent += 1
    assert sent == 3  # half an hour's 20,000 bytes at once: three of 2 x 3,303
    boxes["gemini"].send("codex", "Log", body, new=True)  # another agent's own budget


def test_turns_woken_are_budgeted_per_conversation(store: Store) -> None:
    put_config(store, {"owner": OWNER, "governor": {"thread_turns_per_hour": 4},
                       "agents": {"gemini": WAKE, "claude": WAKE}})
    clock = Clock(step=1)  # no refill meanwhile
    boxes = agents(store, clock, "claude", "gemini")
    boxes["claude"].send("gemini", "Review", "please look", new=True)
    for _ in range(6):
        for name in ("gemini", "claude"):
            box = boxes[name]
            newest = next(iter(box.inbox(unread_only=True, limit=1))).message
            clock.tick()
            box.read(newest.id)
            box.send(newest.sender, "answer", "more")
    skipped = [e["reason"] for e in store.events() if e["event"] == "wake_skipped"]
    assert skipped and all("too many turns woken in this conversation by" in r
                           for r in skipped)
    queued = [e for e in store.events() if e["event"] == "wake_queued"]
    assert len(queued) == 1 + 2 * 2  # the first message's, then two from each sender


# Aging unread mail ------------------------------------------------------------------
def test_the_owner_is_told_once_when_unread_mail_ages_past_the_limit(store: Store) -> None:
    from mailslot.service.aging import look

    put_config(store, {"owner": OWNER, "alerts": {"unread_after_minutes": 30}})
    clock = Clock(step=60)
    boxes = agents(store, clock, "claude", "gemini")
    old = boxes["claude"].send("gemini", "Review", "please look", new=True)
    clock.now += timedelta(minutes=10)
    young = boxes["claude"].send("gemini", "More", "x")
    mine = boxes["claude"].send(OWNER, "For you", "x", new=True)
    assert look(store, clock.now.timestamp()) == old_due(old.id)
    assert notices(store, OWNER) == []
    clock.now += timedelta(minutes=25)  # the first is 35 minutes old, the second 25
    due = look(store, clock.now.timestamp())
    told = notices(store, OWNER)
    assert len(told) == 1 and "gemini: 1, the oldest " + old.id in told[0]
    assert young.id not in told[0] and mine.id not in told[0]
    assert due == old_due(young.id)
    look(store, clock.now.timestamp())
    assert len(notices(store, OWNER)) == 1  # each message is named once
    put_config(store, {"owner": OWNER, "alerts": {"unread_after_minutes": "soon"}})
    assert look(store, clock.now.timestamp()) is None
    assert "config.json: alerts.unread_after_minutes must be a number of minutes above 0" \
        in Config(store.load_config()).problems()


def test_a_watcher_looks_at_unread_mail_s_age(files: Store, root: Path) -> None:
    put_config(files, {"owner": OWNER, "alerts": {"unread_after_minutes": 30}})
    then = Clock(step=1)
    then.now = datetime.now(UTC) - timedelta(hours=2)
    sent = agents(files, then, "claude")["claude"].send("gemini", "Review", "x", new=True)
    done = run_cli("--dir", str(root), "watch", "--once")
    assert done.returncode == 0, done.stderr
    told = notices(files, OWNER)
    assert len(told) == 1 and sent.id in told[0]


def old_due(message_id: str) -> float:
    """When a message comes of age at 30 minutes (its id carries its UTC time)."""
    born = datetime.strptime(message_id[:24], "%Y-%m-%d_%H%M%S.%f").replace(tzinfo=UTC)
    return born.timestamp() + 30 * 60


def test_what_a_sender_was_given_is_looked_for_only_as_far_back_as_the_window(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A send in a mailbox whose log is busy with other agents' old lines reads back a
    few lines past the window's edge, not the whole bounded walk."""
    from mailslot.mail import causes

    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    old = (now - timedelta(seconds=CAUSE_WINDOW + 60)).isoformat()
    lines = [{"ts": old, "event": "delivered", "id": f"x{n}", "agent": "codex"}
             for n in range(1000)]
    read: list[int] = []

    def events(*, newest_first: bool = False) -> object:
        for line in lines:
            read.append(1)
            yield line

    monkeypatch.setattr(store, "events", events)
    assert causes.last_given(store, "gemini", now.timestamp()) is None
    assert 0 < len(read) <= 1  # the first line is already older than the window
