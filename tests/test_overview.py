"""``doctor`` (overview.py): it never says ok over a mailbox that is not (issue 10)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import Mailbox
from mailslot.store import FileStore
from support import fail_os, files_in, make_message

Box = Callable[[str | None], Mailbox]


def test_doctor_names_a_folder_it_cannot_list(box: Box, root: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    box("claude").send("gemini", "s", "b")
    fail_os(monkeypatch, "scandir", "/agents/gemini/new", errno.EACCES)
    problems = box(None).doctor().problems
    assert any("agents/gemini/new cannot be read (Permission denied)" in p for p in problems)


def test_doctor_names_a_folder_or_message_whose_mode_locks_mailslot_out(
        box: Box, root: Path) -> None:
    m = box("claude").send("gemini", "s", "b")
    (root / "agents/gemini/new" / f"{m.id}.md").chmod(0o000)
    report = box(None).doctor()
    assert [p for p in report.problems if "cannot be used by mailslot (mode 0" in p]
    assert box(None).doctor(fix=True).healthy


def test_doctor_names_an_events_log_that_cannot_be_written(box: Box, root: Path) -> None:
    box("claude").send("gemini", "s", "b")
    log = root / "log" / "events.jsonl"
    log.unlink()
    log.mkdir(mode=0o700)  # a folder where the log belongs: every receipt fails
    assert any("events.jsonl cannot be written" in p for p in box(None).doctor().problems)


@pytest.mark.parametrize(("agent", "expected"), [
    ({"wake_on_mail": "yes", "wake_method": "command", "command": ["true"]}, "wake_on_mail"),
    ({"wake_on_mail": True, "wake_method": "tmux"}, "tmux_target"),
])
def test_doctor_reports_wake_settings_that_watch_validate_rejects(
        box: Box, root: Path, agent: dict[str, object], expected: str) -> None:
    FileStore(root).save_config({"agents": {"gemini": agent}})
    problems = box(None).doctor().problems
    assert any(p.startswith("wake: gemini: ") and expected in p for p in problems), problems


def test_deep_doctor_names_a_header_that_lies_and_fix_moves_it_to_quarantine(
        box: Box, root: Path) -> None:
    real = box("claude").send("gemini", "s", "b")
    liar = make_message(subject="liar", n=5).id
    new = root / "agents/gemini/new"
    (new / f"{liar}.md").write_bytes((new / f"{real.id}.md").read_bytes())
    (new / f"{liar}.md").chmod(0o600)
    assert box(None).doctor().healthy  # no message is read without --deep
    deep = box(None).doctor(deep=True)
    assert len(deep.problems) == 1 and "its header names another id" in deep.problems[0]
    fixed = box(None).doctor(fix=True)
    assert fixed.fixed == ["moved 1 unreadable message(s) to the quarantine folder"]
    assert files_in(root / "quarantine/agents/gemini") == [f"{liar}.md"]  # kept, not deleted
    assert files_in(new) == [f"{real.id}.md"]
    assert box(None).doctor(deep=True).healthy


def test_doctor_reports_a_mailbox_another_user_owns(box: Box, root: Path) -> None:
    box("claude").send("gemini", "s", "b")
    if os.geteuid() != 0:
        pytest.skip("needs root to give a folder to another user")  # CI runs as root
    os.chown(root / "agents" / "gemini", 65534, 65534)
    problems = box(None).doctor().problems
    assert any("agents/gemini belongs to another user (uid 65534)" in p for p in problems)
