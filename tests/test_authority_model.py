"""The authority rules against a model small enough to be obviously right.

Hypothesis registers, rotates and revokes agents (some children of others), keeps every
credential ever issued, and tries to send with each of them and with bare names; after
every attempt the service must agree with the model on whether it was allowed.
"""

from __future__ import annotations

import itertools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from mailslot import FileStore, Mailbox, NotFound, Refused
from mailslot.access import authority
from mailslot.access.credentials import read_credential
from mailslot.access.identity import Identity
from mailslot.core.errors import InvalidInput

NAMES = ["ann", "bob", "kid"]


@dataclass
class Reg:
    generation: int = 1
    revoked: bool = False
    parent: str | None = None
    parent_generation: int | None = None


@dataclass
class Held:
    path: str
    name: str
    generation: int


class AuthorityMachine(RuleBasedStateMachine):
    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.store = FileStore(root / "mailbox")
        self.regs: dict[str, Reg] = {}
        self.held: list[Held] = []
        self.count = itertools.count()

    def _keep(self, name: str, issued: authority.Issued) -> None:
        copy = str(self.root / f"held-{next(self.count)}.json")
        shutil.copy(issued.path, copy)
        os.chmod(copy, 0o600)
        self.held.append(Held(copy, name, issued.record.generation))

    def _parent_ok(self, parent: str | None) -> bool:
        return parent is None or (parent in self.regs and not self.regs[parent].revoked
                                  and self.regs[parent].parent is None)

    @rule(name=st.sampled_from(NAMES), parent=st.sampled_from([None, *NAMES]))
    def add(self, name: str, parent: str | None) -> None:
        path = str(self.root / "creds" / f"{name}.json")
        allowed = name not in self.regs and parent != name and self._parent_ok(parent)
        try:
            issued = authority.register(self.store, name, parent=parent, path=path)
        except (Refused, NotFound, InvalidInput) as exc:
            assert not allowed, exc
            return
        assert allowed
        self.regs[name] = Reg(parent=parent, parent_generation=(
            self.regs[parent].generation if parent else None))
        self._keep(name, issued)

    @rule(name=st.sampled_from(NAMES))
    def rotate(self, name: str) -> None:
        reg = self.regs.get(name)
        allowed = reg is not None and not reg.revoked and self._parent_ok(reg.parent)
        try:
            issued = authority.rotate(self.store, name,
                                      path=str(self.root / "creds" / f"{name}.json"))
        except (Refused, NotFound) as exc:
            assert not allowed, exc
            return
        assert allowed and reg is not None
        reg.generation += 1
        if reg.parent is not None:
            reg.parent_generation = self.regs[reg.parent].generation
        self._keep(name, issued)

    @rule(name=st.sampled_from(NAMES))
    def revoke(self, name: str) -> None:
        try:
            authority.revoke(self.store, name)
        except NotFound:
            assert name not in self.regs
            return
        self.regs[name].revoked = True

    def _valid(self, held: Held) -> bool:
        reg = self.regs[held.name]
        if reg.revoked or reg.generation != held.generation:
            return False
        if reg.parent is None:
            return True
        parent = self.regs[reg.parent]
        return not parent.revoked and parent.generation == reg.parent_generation

    @rule(data=st.data(), to=st.sampled_from(NAMES))
    def send_with_credential(self, data: st.DataObject, to: str) -> None:
        if not self.held:
            return
        held = data.draw(st.sampled_from(self.held))
        box = Mailbox(self.store, Identity(held.name, "credential"),
                      credential=read_credential(held.path))
        parent = self.regs[held.name].parent
        allowed = self._valid(held) and (parent is None or to == parent)
        try:
            box.send(to, "s", "b", new=True)
        except Refused as exc:
            assert not allowed, exc
            return
        assert allowed

    @rule(name=st.sampled_from(NAMES))
    def send_by_name(self, name: str) -> None:
        box = Mailbox(self.store, Identity(name, "--agent"))
        try:
            box.send("bob" if name != "bob" else "ann", "s", "b", new=True)
        except Refused:
            assert name in self.regs
            return
        assert name not in self.regs


def test_authority_matches_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                     ) -> None:
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    runs = itertools.count()

    def machine() -> AuthorityMachine:
        root = tmp_path / f"run-{next(runs)}"
        root.mkdir()
        return AuthorityMachine(root)

    run_state_machine_as_test(
        machine,
        settings=settings(max_examples=60, stateful_step_count=25, deadline=None,
                          derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow]),
    )
