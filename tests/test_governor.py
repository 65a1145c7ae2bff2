"""The loop governor: agents that keep answering each other are stopped, the owner never.

Loops run through the service (and the CLI) with an injected clock, so a night of
replies takes a fraction of a second: a fast loop meets the token buckets, a slow one
(398 messages in ten hours, the pace of a loop seen in the wild) meets the hop limit.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.core.errors import Refused, StoreError, Throttled, UnsafePath
from mailslot.core.message import Message
from mailslot.frontends.mcp import tools as mcp_tools
from mailslot.store import Store
from pgcluster import Cluster
from support import put_config

OWNER = "sarah"


class Clock:
    """The time every mailbox of a test shares; each message moves it on ``step``."""

    def __init__(self, step: float) -> None:
        self.now = datetime(2026, 12, 1, 22, 0, tzinfo=UTC)
        self.step = timedelta(seconds=step)

    def __call__(self) -> datetime:
        return self.now

    def tick(self) -> None:
        self.now += self.step


def agents(store: Store, clock: Clock, *names: str) -> dict[str, Mailbox]:
    return {n: Mailbox(store, Identity(n, "--agent"), clock=clock) for n in names}


def in_box(store: Store, agent: str) -> int:
    return len(store.entries(agent, ("unread", "read", "done")))


def run_loop(boxes: dict[str, Mailbox], clock: Clock, *, replies: bool = True,
             most: int = 1000) -> tuple[int, list[str]]:
    """Every agent answers every unread message it has, over and over, as agents that
    reply to each other all night do (``replies``: with ``reply``; else with a new
    message to the sender, which no reply chain links): how many answers were sent,
    and the refusals (an agent whose answer is refused marks that message done)."""
    sent, refusals = 0, []
    while sent < most:
        moved = False
        for box in boxes.values():
            for item in box.inbox(unread_only=True, limit=50):
                if item.message.sender == "mailslot":
                    box.done([item.message.id])
                    continue
                clock.tick()
                try:
                    if replies:
                        box.reply(item.message.id, f"answer {sent}")
                    else:
                        box.send(item.message.sender, "answer", f"answer {sent}")
                        box.done([item.message.id])
                except Throttled as exc:
                    refusals.append(str(exc))
                    box.done([item.message.id])
                else:
                    sent += 1
                moved = True
        if not moved:
            return sent, refusals
    raise AssertionError(f"the loop was not stopped after {most} replies")


@pytest.fixture
def store(root: Path) -> FileStore:
    made = FileStore(root)
    put_config(made, {"owner": OWNER})
    return made


def test_a_fast_two_agent_loop_is_stopped_by_the_pair_limit(store: Store) -> None:
    """Agents that answer with new messages (no reply chain to count) a second apart."""
    clock = Clock(step=1)
    boxes = agents(store, clock, "claude", "gemini")
    boxes["claude"].send("gemini", "Review", "please look", new=True)
    sent, refusals = run_loop(boxes, clock, replies=False)
    # each direction's bucket holds half an hour of the default 120 an hour
    assert 120 <= sent <= 130  # and a token every 30 s meanwhile
    assert refusals and all("too many messages from" in r for r in refusals)
    line = refusals[0]
    assert "\n" not in line and "governor.pair_sends_per_hour 120" in line
    assert "nothing was sent" in line and "try again in" in line
    assert in_box(store, "claude") + in_box(store, "gemini") == sent + 1  # no stray copy


def test_a_slow_two_agent_loop_is_stopped_by_the_hop_limit(store: Store) -> None:
    clock = Clock(step=90)  # 398 messages in ten hours: no bucket ever runs dry
    boxes = agents(store, clock, "claude", "gemini")
    first = boxes["claude"].send("gemini", "Review", "please look", new=True)
    sent, refusals = run_loop(boxes, clock)
    assert sent == 39  # with the first message, 40 in a row from agents: the limit
    assert len(refusals) == 1
    assert "would be message 41 in a row between agents" in refusals[0]
    assert "governor.hop_limit 40" in refusals[0] and "mailslot reply" in refusals[0]
    assert first.id  # the thread is still there for the owner to take up


def test_a_three_agent_loop_is_stopped(store: Store) -> None:
    """Three agents that answer every message they get, started by one message to the
    other two: a slow reply loop (the 398-in-ten-hours pace) ends at the default hop
    limit on each of its chains; a fast loop of new messages at the pair buckets (set
    small here, to keep the test short)."""
    for step, governor in ((90.0, {}), (0.5, {"pair_sends_per_hour": 20})):
        put_config(store, {"owner": OWNER, "governor": governor})
        clock = Clock(step=step)
        boxes = agents(store, clock, "planner", "builder", "tester")
        boxes["planner"].send(["builder", "tester"], "Plan", "go", new=True)
        sent, refusals = run_loop(boxes, clock, replies=not governor)
        assert 0 < sent < 398 and refusals
        expected = "too many messages from" if governor else "41 in a row between agents"
        assert all(expected in r for r in refusals), refusals[:3]
    assert sent <= 6 * 10 + 6  # six directions, ten at once each, one refill or so


def test_the_owner_is_never_limited_and_takes_a_chain_up_again(store: Store) -> None:
    put_config(store, {"owner": OWNER, "governor": {
        "pair_sends_per_hour": 4, "agent_sends_per_hour": 4, "hop_limit": 2,
        "paused": ["all", OWNER]}})
    clock = Clock(step=0.01)
    boxes = agents(store, clock, OWNER, "claude")
    for n in range(50):  # paused, over every limit: the owner's mail goes all the same
        clock.tick()
        boxes[OWNER].send("claude", f"task {n}", "do it", new=True)
    boxes[OWNER].broadcast("all hands", "stop")
    assert in_box(store, "claude") == 50
    put_config(store, {"owner": OWNER, "governor": {"hop_limit": 2}})
    ask = boxes["claude"].send(OWNER, "question", "?")
    answer = boxes[OWNER].reply(ask.id, "answer")  # the owner answers: the count restarts
    again = boxes["claude"].reply(answer.id, "thanks")
    reply = boxes[OWNER].reply(again.id, "and more")
    last = boxes["claude"].reply(reply.id, "ok")
    assert last.in_reply_to == reply.id
    other = agents(store, clock, "gemini")["gemini"]
    one = other.send("claude", "ping", "1", new=True)
    two = boxes["claude"].reply(one.id, "2")
    with pytest.raises(Throttled, match="message 3 in a row"):
        other.reply(two.id, "3")


def test_a_paused_agent_sends_nothing_until_resumed(store: Store) -> None:
    clock = Clock(step=1)
    boxes = agents(store, clock, OWNER, "claude", "gemini")
    assert boxes[OWNER].pause("claude") == ["claude"]
    with pytest.raises(Throttled) as stopped:
        boxes["claude"].send("gemini", "hi", "text", new=True)
    assert str(stopped.value) == (
        "claude is paused by the owner; nothing was sent and your text is unchanged; it "
        "can send again once the owner runs: mailslot resume claude")
    assert in_box(store, "gemini") == 0
    boxes["gemini"].send("claude", "hi", "mail to a paused agent is delivered", new=True)
    assert in_box(store, "claude") == 1
    with pytest.raises(Refused, match="only the owner, sarah, may pause"):
        boxes["gemini"].pause("claude", paused=False)
    assert boxes[OWNER].pause() == ["claude", "all"]
    with pytest.raises(Throttled, match="gemini is paused"):  # a service opened after
        agents(store, clock, "gemini")["gemini"].send("claude", "hi", "x")
    assert boxes[OWNER].pause("claude", paused=False) == ["all"]
    assert boxes[OWNER].pause(paused=False) == []
    agents(store, clock, "claude")["claude"].send("gemini", "hi", "text")
    events = [e["event"] for e in store.events() if e["event"] in ("paused", "resumed")]
    assert events == ["paused", "paused", "resumed", "resumed"]


def test_a_malformed_governor_fails_closed_for_agents_only(store: Store) -> None:
    put_config(store, {"owner": OWNER, "governor": {"hop_limit": "forty"}})
    clock = Clock(step=1)
    boxes = agents(store, clock, OWNER, "claude")
    with pytest.raises(Throttled, match=r"governor.hop_limit must be a number above 0"):
        boxes["claude"].send(OWNER, "hi", "x")
    boxes[OWNER].send("claude", "hi", "the owner still sends", new=True)
    assert any("governor.hop_limit" in p for p in boxes[OWNER].doctor().problems)


def test_wakes_over_the_limit_or_of_a_paused_agent_are_skipped_and_mail_delivered(
        store: Store) -> None:
    put_config(store, {"owner": OWNER, "governor": {"pair_wakes_per_hour": 4},
                       "agents": {"gemini": {"wake_on_mail": True, "wake_method": "command",
                                             "command": ["true"]}}})
    clock = Clock(step=1)
    boxes = agents(store, clock, OWNER, "claude", "gemini")
    for n in range(4):
        clock.tick()
        boxes["claude"].send("gemini", f"n{n}", "x", new=True)
    assert in_box(store, "gemini") == 4
    wakes = [e for e in store.events() if e["event"] in ("wake_queued", "wake_skipped")]
    assert [e["event"] for e in wakes] == ["wake_queued"] * 2 + ["wake_skipped"] * 2
    assert ("too many wakes of gemini from claude (config.json governor.pair_wakes_per_hour"
            " 4)") in wakes[-1]["reason"]
    boxes[OWNER].send("gemini", "owner", "wakes whatever the limit")
    boxes[OWNER].pause("gemini")
    clock.now += timedelta(hours=1)
    boxes["claude"].send("gemini", "later", "x")
    last = [e for e in store.events() if e["event"] in ("wake_queued", "wake_skipped")][-2:]
    assert last[0]["event"] == "wake_queued"  # the owner's
    assert last[1]["event"] == "wake_skipped" and "paused by the owner" in last[1]["reason"]
    assert in_box(store, "gemini") == 6


def wake_events(store: Store, message_id: str) -> list[tuple[str, str]]:
    return [(e["event"], e.get("reason", "")) for e in store.events()
            if e.get("id") == message_id and e["event"] in ("wake_queued", "wake_skipped")]


def test_noisy_senders_spend_only_their_own_share_of_an_agents_wakes(store: Store) -> None:
    """Two throwaway names wake bob until their shares are gone, then keep at it (a
    message every 30 s each, for an hour): carol's wakes of bob go through all the
    while, and the noisy ones are held to their own share."""
    put_config(store, {"owner": OWNER, "agents": {"bob": {
        "wake_on_mail": True, "wake_method": "command", "command": ["true"]}}})
    clock = Clock(step=0.1)  # as fast as a script sends
    boxes = agents(store, clock, "noisy1", "noisy2", "carol")
    for name in ("noisy1", "noisy2"):
        for n in range(31):
            clock.tick()
            boxes[name].send("bob", f"n{n}", "x", new=True)
    clock.tick()
    first = boxes["carol"].send("bob", "real", "please look", wake=True, new=True)
    assert wake_events(store, first.id) == [("wake_queued", "")]
    skipped = [e for e in store.events() if e["event"] == "wake_skipped"]
    assert len(skipped) == 2  # each noisy sender's 31st: its own bucket held 30
    assert all("too many wakes of bob from noisy" in e["reason"] for e in skipped)
    noisy_woken = 0
    carols = []
    for step in range(120):  # an hour: each noisy sender every 30 s, carol every 10 min
        clock.now += timedelta(seconds=30)
        for name in ("noisy1", "noisy2"):
            sent = boxes[name].send("bob", "again", "x", new=True)
            noisy_woken += wake_events(store, sent.id)[0][0] == "wake_queued"
        if step % 20 == 19:
            carols.append(boxes["carol"].send("bob", "real", "more", wake=True, new=True))
    assert [wake_events(store, m.id)[0][0] for m in carols] == ["wake_queued"] * 6
    # three senders share agent_wakes_per_hour 120: 40 an hour each at most
    assert noisy_woken <= 2 * 40 + 2
    reasons = {r for e in store.events() if e["event"] == "wake_skipped"
               for r in [e["reason"]]}
    assert any("governor.agent_wakes_per_hour 120, shared by 3 senders" in r
               for r in reasons), reasons


def test_invented_names_take_no_share_where_credentials_are_required(
        store: Store, root: Path) -> None:
    """With ``require_credentials`` a name nobody registered sends nothing, so it wakes
    nobody and counts as no sender of bob's: the shares stay among known agents."""
    put_config(store, {"owner": OWNER, "require_credentials": True, "agents": {"bob": {
        "wake_on_mail": True, "wake_method": "command", "command": ["true"]}}})
    invented = agents(store, Clock(step=1), "noisy1")["noisy1"]
    with pytest.raises(Refused, match="requires credentials"):
        invented.send("bob", "n", "x", wake=True, new=True)
    assert store.bucket_group("wakes.bob") == {}
    assert not (root / "limits" / "wakes.bob").exists()


def test_a_forged_bucket_holds_nobody_back_longer_than_one_refill(store: Store,
                                                                  root: Path) -> None:
    """Buckets written by hand (or by another agent where it can write them): fewer
    tokens than none is an empty bucket, a time to come or no number a full one; never
    a lock-out of years."""
    put_config(store, {"owner": OWNER, "agents": {"bob": {
        "wake_on_mail": True, "wake_method": "command", "command": ["true"]}}})
    clock = Clock(step=1)
    carol = agents(store, clock, "carol")["carol"]
    now = clock.now.timestamp()
    (root / "limits").mkdir(mode=0o700)
    for group, key in (("sends.carol", "sends.carol"), ("wakes.bob", "wakes.bob.carol")):
        (root / "limits" / group).write_text(f"{key} -1e12 {now}\n")
        (root / "limits" / group).chmod(0o600)
    with pytest.raises(Throttled, match=r"try again in 10 s"):  # 360 an hour: one in 10 s
        carol.send("bob", "s", "b", new=True)
    clock.now += timedelta(seconds=10)
    sent = carol.send("bob", "s", "b", wake=True, new=True)
    [(event, reason)] = wake_events(store, sent.id)
    assert event == "wake_skipped" and reason.endswith("the next in 50 s")  # 60 an hour
    clock.now += timedelta(seconds=60)
    assert wake_events(store, carol.send("bob", "s", "b", wake=True).id)[0][0] == \
        "wake_queued"
    for forged in (f"-1e12 {now + 1e12}", "nan nan", f"1e300 {now}"):
        (root / "limits" / "wakes.bob").write_text(f"wakes.bob.carol {forged}\n")
        sent = carol.send("bob", "s", "b", wake=True, new=True)
        assert wake_events(store, sent.id)[0][0] == "wake_queued", forged


# Two processes at once -----------------------------------------------------------------
_SENDER = textwrap.dedent("""
    import sys
    from mailslot import Mailbox
    from mailslot.access.identity import Identity
    from mailslot.core.errors import Throttled
    from mailslot.backends import open_store
    box = Mailbox(open_store(sys.argv[1]), Identity("claude", "--agent"))
    sys.stdin.readline()  # both started: go
    sent = 0
    for n in range(int(sys.argv[2])):
        try:
            box.send("gemini", f"n{n}", "x", new=True)
            sent += 1
        except Throttled:
            pass
    print(sent)
""")


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_two_processes_sending_at_once_share_one_bucket(
        kind: str, root: Path, request: pytest.FixtureRequest) -> None:
    location = str(root)
    if kind == "postgres":
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        location = cluster.new_database()
    store = open_store(location)
    put_config(store, {"owner": OWNER, "governor": {"pair_sends_per_hour": 20}})  # 10 at once
    procs = [subprocess.Popen([sys.executable, "-c", _SENDER, location, "12"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = []
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        outs.append(int(out))
    delivered = len(store.entries("gemini", ("unread",)))
    assert sum(outs) == delivered
    assert 10 <= delivered <= 11  # the bucket's 10, and at most one token refilled meanwhile


# The front ends ------------------------------------------------------------------------
def run_cli(*argv: str, stdin: str | None = None, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mailslot", *argv], input=stdin,
                          capture_output=True, text=True, timeout=60, env=env)


def test_the_cli_refuses_in_one_line_and_gives_a_piped_body_back(store: Store) -> None:
    put_config(store, {"owner": OWNER, "governor": {"pair_sends_per_hour": 4}})  # 2 at once
    for n in range(2):
        done = run_cli("--agent", "claude", "send", "--to", "gemini", "--subject", f"n{n}",
                       "--new", stdin="body\n")
        assert done.returncode == 0, done.stderr
    body = "line one\n  line two, kept exactly\n"
    stopped = run_cli("--agent", "claude", "send", "--to", "gemini", "--subject", "n3",
                      stdin=body)
    assert stopped.returncode == 1
    assert stopped.stdout == body
    assert stopped.stderr.count("\n") == 1
    assert stopped.stderr.startswith("mailslot: error: too many messages from claude to "
                                     "gemini (config.json governor.pair_sends_per_hour 4)")
    assert in_box(store, "gemini") == 2


def test_pause_and_resume_from_the_cli_are_the_owners(store: Store) -> None:
    refused = run_cli("--agent", "claude", "resume", "claude")
    assert refused.returncode == 1 and "only the owner, sarah, may" in refused.stderr
    paused = run_cli("--agent", OWNER, "pause", "claude")
    assert (paused.returncode, paused.stdout) == (0, "paused claude; paused now: claude\n")
    stopped = run_cli("--agent", "claude", "send", "--to", OWNER, "--subject", "s",
                      "--body", "b")
    assert stopped.returncode == 1 and "mailslot resume claude" in stopped.stderr
    resumed = run_cli("--agent", OWNER, "resume", "--json")
    assert resumed.returncode == 0 and '"paused": []' in resumed.stdout


def test_pause_and_resume_say_what_they_did(store: Store) -> None:
    said = [run_cli("--agent", OWNER, *argv).stdout for argv in (
        ["pause", "claude"], ["pause", "Gemini"], ["resume", "claude"], ["resume", "gemini"],
        ["resume", "gemini"], ["pause"], ["resume", "claude"], ["resume"])]
    assert said == ["paused claude; paused now: claude\n",
                    "paused gemini; paused now: claude, gemini\n",
                    "resumed claude; paused now: gemini\n",
                    "resumed gemini; nobody is paused now\n",
                    "resumed gemini; nobody is paused now\n",
                    "paused every agent; every agent is paused now (mailslot resume)\n",
                    "resumed claude, but every agent is paused now (mailslot resume)\n",
                    "resumed every agent; nobody is paused now\n"]


def test_pause_over_mcp_is_for_the_owner_only(root: Path, store: Store) -> None:
    def opener(agent: str) -> mcp_tools.Opener:
        return lambda: Mailbox(FileStore(root), Identity(agent, "--agent"))
    with pytest.raises(Refused, match="only the owner"):
        mcp_tools.gate(opener("claude"), "resume", "claude")
    result = mcp_tools.gate(opener(OWNER), "pause", "claude")
    facts: dict[str, Any] = result.structured_content or {}
    assert facts == {"paused": ["claude"]}
    with pytest.raises(Throttled):
        mcp_tools.send_message(opener("claude"), OWNER, "s", "b")
    assert (mcp_tools.gate(opener(OWNER), "resume").structured_content
            == {"paused": []})
    sent = mcp_tools.send_message(opener("claude"), OWNER, "s", "b").structured_content
    assert sent is not None and sent["from"] == "claude"


def test_the_send_path_checks_before_it_writes(store: Store) -> None:
    """A refused reply leaves its original as it was (not done) and writes nothing."""
    put_config(store, {"owner": OWNER, "governor": {"hop_limit": 1}})
    clock = Clock(step=1)
    boxes = agents(store, clock, "claude", "gemini")
    first: Message = boxes["claude"].send("gemini", "s", "b", new=True)
    with pytest.raises(Throttled):
        boxes["gemini"].reply(first.id, "no")
    assert store.state_of("gemini", first.id) == "unread"
    assert in_box(store, "claude") == 0


def test_a_send_that_fails_to_deliver_takes_no_token(store: Store,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    put_config(store, {"owner": OWNER, "governor": {"pair_sends_per_hour": 2}})  # 1 at once
    claude = agents(store, Clock(step=1), "claude")["claude"]

    def full_disk(*args: object, **kwargs: object) -> None:
        raise StoreError("the disk is full")

    monkeypatch.setattr(store, "deliver", full_disk)
    with pytest.raises(StoreError):
        claude.send("gemini", "s", "b", new=True)
    monkeypatch.undo()
    claude.send("gemini", "s", "the one token is still there")
    assert in_box(store, "gemini") == 1


def test_a_link_planted_for_a_bucket_is_never_followed(store: Store, root: Path,
                                                       tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("kept\n")
    (root / "limits").mkdir(mode=0o700)
    (root / "limits" / "sends.claude").symlink_to(target)
    claude = agents(store, Clock(step=1), "claude")["claude"]
    with pytest.raises(UnsafePath, match="does not follow links"):
        claude.send("gemini", "s", "b", new=True)
    assert target.read_text() == "kept\n" and in_box(store, "gemini") == 0
