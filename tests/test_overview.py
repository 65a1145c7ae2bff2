"""Overview.py: ``doctor`` never says ok over a mailbox that is not; ``status``
and ``who`` show each caller only what it may see."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from mailslot import Mailbox
from mailslot.backends.files.file_store import FileStore
from mailslot.core.errors import InvalidInput, NotFound
from mailslot.wake.queue import log
from support import fail_os, files_in, make_message, put_config

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
    put_config(FileStore(root), {"agents": {"gemini": agent}})
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


# Who may see where a message stands ---------------------------------------------------
def test_status_is_shown_to_the_sender_and_recipients_only(box: Box, root: Path) -> None:
    put_config(FileStore(root), {"owner": "sarah"})
    m = box("claude").send(["gemini", "qwen"], "plan", "b", new=True)
    mine = box("gemini").reply(m.id, "from gemini")
    theirs = box("qwen").reply(m.id, "from qwen")
    assert box("claude").status(m.id).replies == [mine.id, theirs.id]
    assert box("gemini").status(m.id).replies == [mine.id]  # not qwen's answer to claude
    assert box("sarah").status(m.id).replies == [mine.id, theirs.id]  # the owner
    assert box(None).status(m.id).message.id == m.id  # the person at the folder
    for raw in (m.id, m.id[:20], m.id.rsplit("_", 1)[1]):
        with pytest.raises(NotFound, match="no message") as caught:
            box("codex").status(raw)
        assert raw == m.id or m.id not in str(caught.value)
    absent = m.id[:-8] + "00000000"  # the same answer as for an id that names nothing
    with pytest.raises(NotFound) as hidden:
        box("codex").status(m.id)
    with pytest.raises(NotFound) as nothing:
        box("codex").status(absent)
    assert str(nothing.value) == str(hidden.value).replace(m.id, absent)


def test_an_ambiguous_prefix_lists_only_the_callers_own_mail(box: Box) -> None:
    others = [box("claude").send("gemini", f"private {n}", "b", new=True) for n in range(2)]
    own = [box("codex").send("gemini", f"mine {n}", "b", new=True) for n in range(2)]
    with pytest.raises(InvalidInput, match="ambiguous") as caught:
        box("codex").status(own[0].id[:10])
    assert own[0].id in str(caught.value) and own[1].id in str(caught.value)
    assert not any(o.id in str(caught.value) for o in others)
    assert box("codex").status(own[1].id[:28]).message.id == own[1].id  # sent: nameable


def test_a_retracted_broadcast_is_hidden_from_who_was_never_served_it(box: Box) -> None:
    bc = box("claude").broadcast("s", "b")
    box("gemini").read(bc.id)
    box("claude").retract(bc.id)
    assert box("gemini").status(bc.id).retracted
    assert box("gemini").status(bc.id.rsplit("_", 1)[1]).retracted
    for raw in (bc.id, bc.id.rsplit("_", 1)[1]):
        with pytest.raises(NotFound) as caught:
            box("codex").status(raw)
        assert raw == bc.id or bc.id not in str(caught.value)


def test_retract_does_not_name_the_recipients_of_someone_elses_mail(box: Box) -> None:
    m = box("claude").send("gemini", "s", "b", new=True)
    with pytest.raises(NotFound) as caught:
        box("codex").retract(m.id)
    assert "gemini" not in str(caught.value).replace(m.id, "")


def test_children_see_presence_but_no_pids_folders_or_machines(box: Box, root: Path) -> None:
    box("claude").beacon(program="claude").announce()
    child = Mailbox.open(agent="helper", peer_of="claude")
    listed = {a.name: a for a in child.who()}["claude"]
    assert listed.online and listed.sessions
    assert all((s.pid, s.hostname, s.cwd) == (None, None, None) for s in listed.sessions)
    assert {a.name: a for a in box("gemini").who()}["claude"].sessions[0].pid is not None
    FileStore(root).record_hook_session("claude", "abc", {
        "host": "claude", "pid": 4242, "cwd": "/home/sarah/secret-project", "started": 1.0})
    shown = {s["kind"]: s for s in child.sessions("claude")}
    assert shown["server"]["pid"] is None and shown["server"]["online"]
    assert (shown["hook"]["pid"], shown["hook"]["cwd"]) == (None, None)
    assert {s["kind"]: s for s in box("gemini").sessions("claude")}["hook"]["pid"] == 4242


def test_status_says_the_last_wake_failed_and_when_it_is_tried_again(box: Box,
                                                                      root: Path) -> None:
    store = FileStore(root)
    put_config(store, {"agents": {"gemini": {"wake_on_mail": True, "wake_method": "command",
                                             "command": ["/bin/false", "{id}"]}}})
    sent = box("claude").send("gemini", "s", "b")
    log(store, "wake_failed", sent.id, "gemini", method="command", attempt=1,
        reason="exit status 1", final=False, retry_in=30)
    [shown] = box("claude").status(sent.id).recipients
    assert shown.wake is not None
    retry = datetime.fromisoformat(str(shown.wake["at"])) + timedelta(seconds=30)
    assert shown.wake["retry_at"] == retry.isoformat()
    assert shown.waiting == ("no live session; the last wake (command) failed: exit status "
                             f"1 (retrying at {retry:%Y-%m-%d %H:%M:%S} {retry.tzname()})")
    log(store, "wake_attempt", sent.id, "gemini", method="command", attempt=2)
    [trying] = box("claude").status(sent.id).recipients
    assert trying.waiting == "no live session; a wake is being tried now"


def test_who_reads_a_bounded_tail_of_the_events_log_however_long(root: Path) -> None:
    """Old unread mail with no delivery receipt (as ``import`` leaves it) behind a long
    log: ``who`` reads at most its newest UNSURFACED_EVENTS lines, where mail shown to
    a model is found and mail never shown is counted."""
    from mailslot.access.identity import Identity
    from mailslot.service.ladder import record_surfaced
    from mailslot.service.overview import UNSURFACED_EVENTS

    store = FileStore(root)
    shown, never = make_message(sender="codex", n=0), make_message(sender="codex", n=1)
    for message in (shown, never):  # dated September 2026: long overdue
        store.deliver(message, ["gemini"])
    for n in range(3 * UNSURFACED_EVENTS):  # what a busy mailbox logged since
        store.append_event({"ts": "2026-12-01T00:00:00+00:00", "event": "read",
                            "id": f"2026-12-01_000000.000000_a_to_b_{n:08x}", "agent": "b"})
    record_surfaced(store, "gemini", [shown], host="claude", session="s-1", how="start")
    read = []
    events = store.events

    def counted(*, newest_first: bool = False) -> Iterator[dict[str, object]]:
        for event in events(newest_first=newest_first):
            read.append(event)
            yield event

    store.events = counted  # type: ignore[method-assign]
    [gemini] = [a for a in Mailbox(store, Identity("claude", "--agent")).who()
                if a.name == "gemini"]
    assert (gemini.unsurfaced, gemini.unsurfaced_since) == (1, "2026-09-21T12:00:01Z")
    assert 0 < len(read) <= UNSURFACED_EVENTS + 1  # not the 6,000 lines of the log
