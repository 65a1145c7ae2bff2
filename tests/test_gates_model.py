"""The gate and admission rules against a model small enough to be obviously
right.

Hypothesis gates and opens inboxes (alone or behind a shared group gate), sends, asks to
join, admits, refuses and revokes; after every step the service must agree with the
model on whether the step was allowed, and on every gate's members and requests.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from mailslot import FileStore, Mailbox, Refused
from mailslot.access import gates
from mailslot.access.authority import Principal
from mailslot.access.identity import Identity
from mailslot.core.config import Config
from mailslot.core.errors import InvalidInput
from support import put_config

AGENTS = ["ann", "bob", "cat"]
OWNER = "sarah"
GROUPS = [None, "red"]
everyone = st.sampled_from([*AGENTS, OWNER])
agents = st.sampled_from(AGENTS)


class GateMachine(RuleBasedStateMachine):
    def __init__(self, root: Path) -> None:
        super().__init__()
        self.store = FileStore(root)
        put_config(self.store, {"owner": OWNER})
        for name in [*AGENTS, OWNER]:
            self.box(name).send(name, "hello", "b", new=True)  # every one has a mailbox
        self.gate: dict[str, str | None] = dict.fromkeys(AGENTS)  # None, "" (own) or group
        self.members: dict[str, set[str]] = {}
        self.requests: dict[str, set[str]] = {}

    def box(self, name: str) -> Mailbox:
        return Mailbox(self.store, Identity(name, "--agent"))

    def key(self, agent: str) -> str:
        """Where the model keeps an agent's gate: its name, or ``+group``."""
        group = self.gate[agent]
        return f"+{group}" if group else agent

    def in_group(self, group: str) -> list[str]:
        return [a for a in AGENTS if self.gate[a] == group]

    @initialize(founder=agents)
    def found(self, founder: str) -> None:
        """Start with a group gate, so the shared rules are exercised from step one."""
        self.switch(founder, True, "red")

    @rule(agent=agents, on=st.booleans(), group=st.sampled_from(GROUPS))
    def switch(self, agent: str, on: bool, group: str | None) -> None:
        if not on:
            allowed = group is None or self.gate[agent] == group
        else:
            others = [a for a in self.in_group(group) if a != agent] if group else []
            allowed = (group is None or self.gate[agent] == group or not others
                       or agent in self.members.get(f"+{group}", set()))
        try:
            self.box(agent).gate.switch(on, group)
        except (Refused, InvalidInput) as exc:
            assert not allowed, exc
            return
        assert allowed
        self.gate[agent] = (group or "") if on else None

    def may(self, sender: str, recipient: str) -> bool:
        """The model's rule: may ``sender`` write to ``recipient`` now?"""
        return (self.gate[recipient] is None or sender in (recipient, OWNER)
                or sender in self.members.get(self.key(recipient), set()))

    @rule(sender=everyone, recipient=agents)
    def send(self, sender: str, recipient: str) -> None:
        allowed = self.may(sender, recipient)
        try:
            self.box(sender).send(recipient, "s", "b")
        except Refused as exc:
            assert not allowed, exc
            return
        assert allowed

    @rule(sender=everyone, to=agents)
    def join(self, sender: str, to: str) -> None:
        key = self.key(to)
        allowed = self.gate[to] is not None and sender not in self.members.get(key, set())
        try:
            self.box(sender).gate.join(to, "please")
        except InvalidInput as exc:
            assert not allowed, exc
            return
        assert allowed
        self.requests.setdefault(key, set()).add(sender)

    @rule(agent=agents, who=everyone)
    def admit(self, agent: str, who: str) -> None:
        key = self.key(agent)
        changed = self.box(agent).gate.admit(who)
        assert changed == (who not in self.members.get(key, set()))
        self.members.setdefault(key, set()).add(who)
        self.requests.get(key, set()).discard(who)

    @rule(agent=agents, who=everyone)
    def refuse(self, agent: str, who: str) -> None:
        key = self.key(agent)
        allowed = who in self.requests.get(key, set())
        try:
            self.box(agent).gate.refuse(who)
        except InvalidInput as exc:
            assert not allowed, exc
            return
        assert allowed
        self.requests[key].discard(who)

    @rule(agent=agents, who=everyone)
    def revoke(self, agent: str, who: str) -> None:
        key = self.key(agent)
        assert self.box(agent).gate.revoke(who) == (who in self.members.get(key, set()))
        self.members.get(key, set()).discard(who)

    @invariant()
    def everyone_passes_as_the_model_says(self) -> None:
        config = Config(self.store.load_config())
        for sender in [*AGENTS, OWNER]:
            for recipient in AGENTS:
                assert gates.passes(self.store, config, Principal(sender), recipient) == \
                    self.may(sender, recipient), (sender, recipient)

    @invariant()
    def gates_agree(self) -> None:
        for agent in AGENTS:
            status = self.box(agent).gate.status()
            key = self.key(agent)
            assert status["accept"] == ("open" if self.gate[agent] is None else "members")
            assert status.get("group") == (self.gate[agent] or None)
            assert status["members"] == sorted(self.members.get(key, set()))
            assert status["pending"] == sorted(self.requests.get(key, set()))


def test_gates_match_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    runs = itertools.count()

    def machine() -> GateMachine:
        root = tmp_path / f"run-{next(runs)}"
        return GateMachine(root)

    run_state_machine_as_test(
        machine,
        settings=settings(max_examples=80, stateful_step_count=30, deadline=None,
                          derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow]),
    )
