"""Retention: the owner archives done mail into month zips, finds it, and brings it back;
agents cannot; a hostile, planted, busy or full archive loses nothing."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import FileStore
from mailslot.backends.files import archive_files
from mailslot.core.dates import UTC, datetime, timedelta
from mailslot.core.ids import new_id
from mailslot.core.message import Message

OWNER = "sarah"  # the owner the `owned` fixture names (conftest.py)
MARCH = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def old_mail(root: Path, n: int, *, state: str = "done", to: str = "gemini",
             words: str = "ancient plans") -> Message:
    """A message from March 2026 to ``to``, left in ``state``."""
    when = MARCH + timedelta(minutes=n)
    message = Message(new_id(when, "claude", [to]), when.isoformat(), "claude", (to,),
                      f"old {n}", f"{words} number {n}")
    store = FileStore(root)
    store.deliver(message, [to])
    if state != "unread":
        store.move(to, message.id, state)  # type: ignore[arg-type]
    return message


def test_the_owner_archives_done_mail_finds_it_and_brings_it_back(
        owned: FileStore, root: Path, cli: Callable[..., object]) -> None:
    done = [old_mail(root, n) for n in range(3)]
    read = old_mail(root, 10, state="read")
    unread = old_mail(root, 11, state="unread")
    dry = cli("--agent", OWNER, "archive", "--older-than", "30d", "--dry-run")
    assert (dry.code, dry.out) == (0, "would archive 2026-03: 3 message(s)\n")  # type: ignore[attr-defined]
    assert owned.state_of("gemini", done[0].id) == "done"
    assert not (root / "archive" / "2026-03.zip").exists()

    moved = cli("--agent", OWNER, "archive", "--older-than", "30d")
    assert moved.out == "archived 2026-03: 3 message(s)\n"  # type: ignore[attr-defined]
    zipped = root / "archive" / "2026-03.zip"
    assert stat.S_IMODE(zipped.stat().st_mode) == 0o600
    assert sorted(zipfile.ZipFile(zipped).namelist()) == sorted(
        f"gemini/{m.id}.md" for m in done)
    assert [owned.state_of("gemini", m.id) for m in done] == [None] * 3
    assert owned.state_of("gemini", read.id) == "read"  # read and unread never move
    assert owned.state_of("gemini", unread.id) == "unread"

    found = cli("--agent", "gemini", "search", "ancient", "--limit", "50")
    assert found.out.count("(archived)") == 3  # type: ignore[attr-defined]
    assert "old 10" in found.out and "still indexing" not in found.out  # type: ignore[attr-defined]
    shown = cli("--agent", "gemini", "read", done[0].id)  # shown from its zip, as found
    assert shown.code == 0 and "number 0" in shown.out  # type: ignore[attr-defined]
    assert ("state:    done (archived in archive/2026-03.zip; the owner brings it back "
            "with: mailslot archive --restore 2026-03)") in shown.out  # type: ignore[attr-defined]
    tail = done[1].id.rsplit("_", 1)[1]
    by_tail = cli("--agent", "gemini", "read", tail, "--json")  # a short id names it too
    assert json.loads(by_tail.out)["archived"] is True  # type: ignore[attr-defined]
    assert json.loads(by_tail.out)["id"] == done[1].id  # type: ignore[attr-defined]
    other = cli("--agent", "codex", "read", tail)  # another agent's archive names nothing
    assert other.code == 1 and done[1].id not in other.err  # type: ignore[attr-defined]
    status = cli("--agent", "claude", "status", tail)
    assert "archived in archive/2026-03.zip" in status.err  # type: ignore[attr-defined]
    assert cli("--agent", OWNER, "archive", "--list").out == (  # type: ignore[attr-defined]
        "archived 2026-03: 3 message(s)\n")

    back = cli("--agent", OWNER, "archive", "--restore", "--all")
    assert back.out == "restored 2026-03: 3 message(s)\n"  # type: ignore[attr-defined]
    assert [owned.state_of("gemini", m.id) for m in done] == ["done"] * 3
    assert not zipped.exists()
    again = cli("--agent", "gemini", "search", "ancient", "--limit", "50", "--json")
    assert again.out.count('"id"') == 5 and "archived" not in again.out  # type: ignore[attr-defined]


def test_an_agent_cannot_archive_or_restore(owned: FileStore, root: Path,
                                            cli: Callable[..., object]) -> None:
    old_mail(root, 1)
    for argv in (["--older-than", "1d"], ["--restore", "--all"], ["--list"]):
        refused = cli("--agent", "gemini", "archive", *argv)
        assert refused.code == 1  # type: ignore[attr-defined]
        assert refused.err.startswith("mailslot: error: only the owner, sarah, may")  # type: ignore[attr-defined]
    assert not (root / "archive").exists()


@pytest.mark.parametrize("age", ["90", "d", "-3d", "3m", "1.5w", "0d", "٣d"])
def test_an_age_that_is_not_days_or_weeks_is_refused_in_one_line(
        owned: FileStore, cli: Callable[..., object], age: str) -> None:
    refused = cli("--agent", OWNER, "archive", "--older-than", age)
    assert refused.code == 2  # type: ignore[attr-defined]
    assert refused.err.count("\n") == 1 and "--older-than" in refused.err  # type: ignore[attr-defined]


def _planted_zip(root: Path, names: dict[str, bytes]) -> Path:
    folder = root / "archive"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / "2026-03.zip"
    with zipfile.ZipFile(path, "w") as out:
        for name, data in names.items():
            out.writestr(name, data)
    return path


@pytest.mark.parametrize("name", ["../../evil.md", "/tmp/evil.md", "gemini/../../x.md",
                                  "Gemini/2026-03-10_120000.000000_claude_to_gemini_0a.md",
                                  "gemini/not-an-id.md", "gemini/"])
def test_a_restore_refuses_any_member_that_is_not_a_message_of_an_agent(
        owned: FileStore, root: Path, tmp_path: Path, name: str) -> None:
    planted = _planted_zip(root, {name: b"---\nid: x\n---\nbody\n"})
    with pytest.raises(Exception, match=r"is not a message of an agent; nothing was restored"):
        owned.restore_archived(None)
    assert planted.exists() and not (tmp_path / "evil.md").exists()
    assert not (root / "agents").exists()


def test_a_member_whose_header_names_another_id_is_refused(owned: FileStore, root: Path
                                                           ) -> None:
    real = old_mail(root, 1, state="done")
    data = (root / "agents" / "gemini" / "done" / f"{real.id}.md").read_bytes()
    other = new_id(MARCH, "claude", ["gemini"])
    _planted_zip(root, {f"gemini/{other}.md": data})
    with pytest.raises(Exception, match="not the one its name says"):
        owned.restore_archived(["2026-03"])
    assert owned.state_of("gemini", other) is None


def test_a_planted_link_in_archive_is_never_followed(owned: FileStore, root: Path,
                                                    tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.zip"
    with zipfile.ZipFile(elsewhere, "w") as out:
        out.writestr("x.txt", b"x")
    (root / "archive").mkdir(mode=0o700)
    (root / "archive" / "2026-03.zip").symlink_to(elsewhere)
    with pytest.raises(Exception, match=r"symlink|link"):
        owned.restore_archived(None)
    old_mail(root, 1)
    with pytest.raises(Exception, match=r"symlink|link"):
        owned.archive_done("2026-04-01_000000")  # adding to the month reads it first
    assert len(list((root / "agents" / "gemini" / "done").iterdir())) == 1  # not moved


def test_two_archivers_at_once_the_second_is_told_and_changes_nothing(
        owned: FileStore, root: Path) -> None:
    message = old_mail(root, 1)
    (root / "archive").mkdir(mode=0o700)
    fd = os.open(root / "archive" / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(Exception, match="another mailslot archive is running"):
            FileStore(root).archive_done("2026-04-01_000000")
    finally:
        os.close(fd)
    assert owned.state_of("gemini", message.id) == "done"
    assert FileStore(root).archive_done("2026-04-01_000000") == {"2026-03": 1}


def test_a_full_disk_mid_archive_moves_nothing_and_leaves_no_temporary_file(
        owned: FileStore, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = [old_mail(root, n) for n in range(3)]
    real = zipfile.ZipFile.writestr
    calls = []

    def full(self: zipfile.ZipFile, *args: object, **kwargs: object) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(zipfile.ZipFile, "writestr", full)
    with pytest.raises(Exception, match=r"nothing was moved .*the disk is full"):
        owned.archive_done("2026-04-01_000000")
    monkeypatch.undo()
    assert [owned.state_of("gemini", m.id) for m in kept] == ["done"] * 3
    assert sorted(p.name for p in (root / "archive").iterdir()) == [".lock"]


def test_a_run_killed_after_the_zip_is_finished_by_the_next(
        owned: FileStore, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = [old_mail(root, n) for n in range(3)]

    def killed(self: object, month: str, files: object) -> None:
        raise KeyboardInterrupt  # as a kill between the rename and the removals

    monkeypatch.setattr(archive_files.MonthArchives, "_remove_archived", killed)
    with pytest.raises(KeyboardInterrupt):
        owned.archive_done("2026-04-01_000000")
    monkeypatch.undo()
    assert [owned.state_of("gemini", m.id) for m in kept] == ["done"] * 3  # nothing lost
    assert FileStore(root).archive_done("2026-04-01_000000") == {"2026-03": 3}
    names = zipfile.ZipFile(root / "archive" / "2026-03.zip").namelist()
    assert sorted(names) == sorted(f"gemini/{m.id}.md" for m in kept)  # each once
    assert [owned.state_of("gemini", m.id) for m in kept] == [None] * 3


def test_a_restore_killed_midway_is_finished_by_the_next(
        owned: FileStore, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = [old_mail(root, n) for n in range(3)]
    owned.archive_done("2026-04-01_000000")
    real = FileStore._stage
    staged = []

    def dies(self: FileStore, data: bytes, name: str, *, sync: bool = True) -> str:
        staged.append(name)
        if len(staged) == 2:
            raise KeyboardInterrupt
        return real(self, data, name, sync=sync)

    monkeypatch.setattr(FileStore, "_stage", dies)
    with pytest.raises(KeyboardInterrupt):
        FileStore(root).restore_archived(None)
    monkeypatch.undo()
    assert FileStore(root).restore_archived(None) == {"2026-03": 2}  # the rest
    assert [owned.state_of("gemini", m.id) for m in kept] == ["done"] * 3
    assert not (root / "archive" / "2026-03.zip").exists()


def test_archiving_more_into_a_month_keeps_what_it_held(owned: FileStore, root: Path
                                                        ) -> None:
    first = old_mail(root, 1)
    owned.archive_done("2026-04-01_000000")
    second = old_mail(root, 2, to="codex")
    assert FileStore(root).archive_done("2026-04-01_000000") == {"2026-03": 1}
    assert FileStore(root).archive_months() == {"2026-03": 2}
    assert [a for a, _ in FileStore(root).archived(first.id)] == ["gemini"]
    assert [a for a, _ in FileStore(root).archived(second.id)] == ["codex"]


def test_an_unknown_month_is_refused_and_nothing_moves(owned: FileStore, root: Path,
                                                       cli: Callable[..., object]) -> None:
    old_mail(root, 1)
    owned.archive_done("2026-04-01_000000")
    missing = cli("--agent", OWNER, "archive", "--restore", "2026-03", "2025-01")
    assert missing.code == 1  # type: ignore[attr-defined]
    assert "no archive for 2025-01" in missing.err  # type: ignore[attr-defined]
    assert (root / "archive" / "2026-03.zip").exists()
    bad = cli("--agent", OWNER, "archive", "--restore", "../x")
    assert bad.code == 2  # type: ignore[attr-defined]


def test_export_and_backup_hold_archived_mail_and_a_restore_brings_it_back(
        owned: FileStore, root: Path, tmp_path: Path, cli: Callable[..., object]) -> None:
    kept = old_mail(root, 1)
    current = old_mail(root, 2, state="unread")
    owned.archive_done("2026-04-01_000000")
    exported = cli("export")
    assert exported.code == 0  # type: ignore[attr-defined]
    assert kept.id in exported.out and current.id in exported.out  # type: ignore[attr-defined]
    assert '"gemini": "done"' in exported.out  # type: ignore[attr-defined]
    backup = tmp_path / "mail.tar.gz"
    assert cli("backup", str(backup)).code == 0  # type: ignore[attr-defined]
    into = tmp_path / "restored"
    restored = cli("restore", str(backup), "--into", str(into))
    assert restored.code == 0, restored.err  # type: ignore[attr-defined]
    again = FileStore(into)
    assert again.state_of("gemini", kept.id) == "done"
    assert again.state_of("gemini", current.id) == "unread"


def test_counts_follow_the_archive_and_the_restore(owned: FileStore, root: Path,
                                                   cli: Callable[..., object]) -> None:
    """Archiving and restoring change done folders outside a state move: the done counts
    are kept right, so `doctor` finds nothing stale and `who` lists no folder."""
    for n in range(4):
        old_mail(root, n)
    assert owned.count_done("gemini") == 4
    cli("--agent", OWNER, "archive", "--older-than", "30d")
    assert owned.count_done("gemini") == 0
    assert owned._trusted_done(owned._read_tally("gemini"),
                               owned._done_stamp("gemini")) == 0  # from the tally
    assert cli("--agent", OWNER, "doctor").code == 0  # type: ignore[attr-defined]
    cli("--agent", OWNER, "archive", "--restore", "--all")
    assert owned._trusted_done(owned._read_tally("gemini"),
                               owned._done_stamp("gemini")) == 4
    assert cli("--agent", OWNER, "doctor").code == 0  # type: ignore[attr-defined]


def test_an_empty_listing_of_all_mail_names_the_archive(owned: FileStore, root: Path,
                                                         cli: Callable[..., object]) -> None:
    for n in range(3):
        old_mail(root, n)
    cli("--agent", OWNER, "archive", "--older-than", "30d")
    shown = cli("--agent", "gemini", "inbox", "--all")
    assert shown.out == (  # type: ignore[attr-defined]
        "no messages here; 3 archived in 2026-03: mailslot search finds them, and the "
        "owner brings them back with mailslot archive --restore 2026-03\n")
    assert cli("--agent", "codex", "inbox", "--all").out == "no messages\n"  # type: ignore[attr-defined]
    assert cli("--agent", "gemini", "inbox", "--all", "--json").out == "[]\n"  # type: ignore[attr-defined]
