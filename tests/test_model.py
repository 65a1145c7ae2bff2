"""The service against a model small enough to be obviously right.

Hypothesis drives send, read, mark-read, done, reply, broadcast and retract in any order
among three agents (including sending to oneself and acting on mail one does not have),
and after every step compares each agent's inbox (ids, states, order) with the model.
fsync is switched off here: this checks the rules, test_crash.py checks durability.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from mailslot import FileStore, Mailbox, NotFound, Refused
from mailslot.access.identity import Identity

AGENTS = ["ann", "bob", "cat"]
ORDER = {"unread": 0, "read": 1, "done": 2}


@dataclass
class Model:
    sender: dict[str, str] = field(default_factory=dict)  # every id -> its sender
    boxes: dict[str, dict[str, str]] = field(
        default_factory=lambda: {a: {} for a in AGENTS})  # agent -> id -> state
    broadcasts: dict[str, bool] = field(default_factory=dict)  # id -> still live
    seen: dict[str, set[str]] = field(default_factory=lambda: {a: set() for a in AGENTS})

    def visible(self, agent: str, mid: str) -> str | None:
        """The state ``agent`` sees ``mid`` in, or None when it is not theirs to see."""
        if mid in self.boxes[agent]:
            return self.boxes[agent][mid]
        if mid not in self.broadcasts:
            return None
        own, served = self.sender[mid] == agent, mid in self.seen[agent]
        if not self.broadcasts[mid] and not served and not own:
            return None
        return "read" if served or own else "unread"

    def settle(self, agent: str, mid: str, to: str) -> str:
        if mid in self.boxes[agent]:
            state = self.boxes[agent][mid]
            if ORDER[to] > ORDER[state]:
                self.boxes[agent][mid] = state = to
            return state
        if self.sender[mid] != agent:
            self.seen[agent].add(mid)
        return "read"

    def inbox(self, agent: str, *, include_done: bool) -> dict[str, str]:
        view = {m: s for m, s in self.boxes[agent].items() if include_done or s != "done"}
        for mid, live in self.broadcasts.items():
            if not live or self.sender[mid] == agent:
                continue
            served = mid in self.seen[agent]
            if not served:
                view[mid] = "unread"
            elif include_done:
                view[mid] = "read"
        return view


class MailboxMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.model = Model()

    def box(self, agent: str) -> Mailbox:
        return Mailbox(FileStore(self.root), Identity(agent, "--agent"))

    @initialize(target=ids)
    def first_message(self) -> str:
        m = self.box("ann").send("bob", "hello", "first")
        self.model.sender[m.id] = "ann"
        self.model.boxes["bob"][m.id] = "unread"
        return m.id

    @rule(target=ids, sender=st.sampled_from(AGENTS),
          to=st.lists(st.sampled_from(AGENTS), min_size=1, max_size=3, unique=True))
    def send(self, sender: str, to: list[str]) -> str:
        m = self.box(sender).send(to, "s", "b")
        assert m.to == tuple(to)
        self.model.sender[m.id] = sender
        for name in to:
            self.model.boxes[name][m.id] = "unread"
        return m.id

    @rule(target=ids, sender=st.sampled_from(AGENTS))
    def broadcast(self, sender: str) -> str:
        m = self.box(sender).broadcast("news", "b")
        self.model.sender[m.id] = sender
        self.model.broadcasts[m.id] = True
        return m.id

    @rule(agent=st.sampled_from(AGENTS), mid=ids, how=st.sampled_from(["read", "peek", "mark"]))
    def read(self, agent: str, mid: str, how: str) -> None:
        expected = self.model.visible(agent, mid)
        box = self.box(agent)
        if expected is None:
            with pytest.raises(NotFound):
                box.read(mid) if how != "mark" else box.mark_read(mid)
            return
        if how == "peek":
            assert box.read(mid, mark=False).state == expected
            return
        item = box.read(mid) if how == "read" else box.mark_read(mid)
        assert item.state == self.model.settle(agent, mid, "read")

    @rule(agent=st.sampled_from(AGENTS), mid=ids)
    def done(self, agent: str, mid: str) -> None:
        if self.model.visible(agent, mid) is None:
            with pytest.raises(NotFound):
                self.box(agent).done([mid])
            return
        [item] = self.box(agent).done([mid])
        assert item.state == self.model.settle(agent, mid, "done")

    @rule(target=ids, agent=st.sampled_from(AGENTS), mid=ids)
    def reply(self, agent: str, mid: str) -> str:
        if self.model.visible(agent, mid) is None:
            with pytest.raises(NotFound):
                self.box(agent).reply(mid, "r")
            return mid
        original_sender = self.model.sender[mid]
        if mid in self.model.broadcasts and original_sender == agent:
            with pytest.raises(Refused):
                self.box(agent).reply(mid, "r")
            return mid
        answer = self.box(agent).reply(mid, "r")
        assert answer.to == (original_sender,) and answer.in_reply_to == mid
        self.model.sender[answer.id] = agent
        self.model.boxes[original_sender][answer.id] = "unread"
        self.model.settle(agent, mid, "done")
        return answer.id

    @rule(agent=st.sampled_from(AGENTS), mid=ids)
    def retract(self, agent: str, mid: str) -> None:
        box = self.box(agent)
        if mid not in self.model.broadcasts:  # directed mail cannot be recalled
            involved = agent == self.model.sender[mid] or mid in self.model.boxes[agent]
            # and one who neither sent nor received it is told nothing about it
            with pytest.raises(Refused if involved else NotFound,
                               match="not a broadcast" if involved else "no broadcast"):
                box.retract(mid)
        elif self.model.sender[mid] != agent:
            with pytest.raises(Refused):
                box.retract(mid)
        else:
            assert box.retract(mid).id == mid
            self.model.broadcasts[mid] = False

    @invariant()
    def inboxes_match_the_model(self) -> None:
        for agent in AGENTS:
            for include_done in (False, True):
                page = self.box(agent).inbox(include_done=include_done, limit=1000)
                got = [i.message.id for i in page]
                assert got == sorted(got, reverse=True)
                assert {i.message.id: i.state for i in page} == self.model.inbox(
                    agent, include_done=include_done)

    @invariant()
    def nothing_is_left_in_staging(self) -> None:
        tmp = self.root / "tmp"
        assert not tmp.exists() or os.listdir(tmp) == []


def test_service_matches_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    runs = itertools.count()
    run_state_machine_as_test(
        lambda: MailboxMachine(tmp_path / f"run-{next(runs)}"),
        settings=settings(max_examples=60, stateful_step_count=25, deadline=None,
                          derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow]),
    )
