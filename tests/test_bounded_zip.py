"""A hostile month archive costs a bounded read: a zip bomb is refused before it is
unpacked by archiving, search, read and restore alike, and a restore that refuses any
member puts nothing back."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import FileStore
from mailslot.backends.files import bounded_zip
from mailslot.core.dates import timedelta
from mailslot.core.ids import new_id
from mailslot.core.message import Message, to_bytes
from support import run_measured
from test_archiving import MARCH, OWNER

BOMB_BYTES = 60 << 20
"""A member far past the send limit (1 MiB by default), yet small enough that the
mailslot of before read it whole: 60 MB of one letter, packed to about 60 KB."""
RSS_BOUND_KB = 110 << 10
"""Peak memory a refusing command stays under (a plain command takes 40 to 60 MB)."""


def old_mail(store: FileStore, n: int, *, to: str = "gemini", body: str = "") -> Message:
    """A done message of March 2026 to ``to``."""
    when = MARCH + timedelta(minutes=n)
    message = Message(new_id(when, "claude", [to]), when.isoformat(), "claude", (to,),
                      f"old {n}", body or f"ancient plans number {n}")
    store.deliver(message, [to])
    store.move(to, message.id, "done")
    return message


def bomb(zipped: Path, *, keep: list[Message], size: int = BOMB_BYTES) -> Message:
    """Rewrite the month's zip: the messages ``keep`` as archived, then a message
    whose body is ``size`` bytes of one letter (written streaming: the test's own
    memory stays small)."""
    when = MARCH + timedelta(days=1)
    message = Message(new_id(when, "claude", ["gemini"]), when.isoformat(), "claude",
                      ("gemini",), "bomb", "")
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as out:
        for kept in keep:
            out.writestr(f"gemini/{kept.id}.md", to_bytes(kept))
        info = zipfile.ZipInfo(f"gemini/{message.id}.md", (2026, 3, 11, 12, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with out.open(info, "w") as member:
            member.write(to_bytes(message))
            chunk = b"z" * min(size, 1 << 20)
            for _ in range(size // len(chunk)):
                member.write(chunk)
            member.write(b"\n")
    return message


def test_a_zip_bomb_is_refused_quickly_in_bounded_memory_and_restores_nothing(
        owned: FileStore, root: Path) -> None:
    kept = [old_mail(owned, n) for n in range(3)]
    owned.archive_done("2026-04-01_000000")
    zipped = root / "archive" / "2026-03.zip"
    planted = bomb(zipped, keep=kept)
    assert zipped.stat().st_size < 1 << 20  # the test's own file stays small
    before = zipped.read_bytes()
    later = old_mail(owned, 50)  # archiving again must rewrite the month's zip

    code, err, rss, took = run_measured("--agent", OWNER, "archive", "--older-than", "30d")
    assert (code, err.count("\n")) == (1, 1), err
    assert "refused unread" in err and "done mail was left where it is" in err
    assert rss < RSS_BOUND_KB and took < 60, (rss, took)
    assert owned.state_of("gemini", later.id) == "done" and zipped.read_bytes() == before

    code, err, rss, took = run_measured("--agent", "gemini", "search", "bomb")
    assert code == 0 and rss < RSS_BOUND_KB and took < 60, (err, rss, took)
    assert err.strip() == "" and planted.id[-8:] not in err

    code, err, rss, took = run_measured("--agent", "gemini", "read", planted.id)
    assert code == 1 and rss < RSS_BOUND_KB and took < 60, (err, rss)

    code, err, rss, took = run_measured("--agent", OWNER, "archive", "--restore", "2026-03")
    assert (code, err.count("\n")) == (1, 1), err
    assert "refused unread; nothing was restored" in err
    assert rss < RSS_BOUND_KB and took < 60, (rss, took)
    assert [owned.state_of("gemini", m.id) for m in [*kept, planted]] == [None] * 4
    assert zipped.read_bytes() == before  # still archived: nothing lost either


def test_a_member_packed_past_the_ratio_is_refused_before_it_is_unpacked(
        owned: FileStore, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the size limit but 1000 times its packed size: refused unread."""
    kept = old_mail(owned, 1)
    owned.archive_done("2026-04-01_000000")
    planted = bomb(root / "archive" / "2026-03.zip", keep=[kept], size=512 << 10)
    opened: list[object] = []
    real = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open",
                        lambda self, info, *a, **k: opened.append(info) or real(
                            self, info, *a, **k))
    with pytest.raises(Exception, match=r"more than 100 times its packed size"):
        FileStore(root).restore_archived(None)
    assert all(getattr(i, "filename", i) != f"gemini/{planted.id}.md" for i in opened)
    assert owned.state_of("gemini", kept.id) is None  # nothing put back


def test_a_zip_listing_too_many_members_is_refused_before_its_directory_is_read(
        owned: FileStore, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(5):
        old_mail(owned, n)
    owned.archive_done("2026-04-01_000000")
    monkeypatch.setattr(bounded_zip, "MAX_MEMBERS", 4)
    parsed: list[object] = []
    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents",
                        lambda self: parsed.append(self))
    with pytest.raises(Exception, match=r"lists 5 members, past the 4 a month archive"):
        FileStore(root).archive_months()
    with pytest.raises(Exception, match=r"lists 5 members.*; nothing was restored"):
        FileStore(root).restore_archived(None)
    assert parsed == []


def test_a_restore_of_several_months_checks_all_before_putting_any_back(
        owned: FileStore, root: Path) -> None:
    march = old_mail(owned, 1)
    april = Message(new_id(MARCH + timedelta(days=30), "claude", ["gemini"]),
                    (MARCH + timedelta(days=30)).isoformat(), "claude", ("gemini",),
                    "april", "body")
    owned.deliver(april, ["gemini"])
    owned.move("gemini", april.id, "done")
    owned.archive_done("2026-05-01_000000")
    with zipfile.ZipFile(root / "archive" / "2026-04.zip", "a") as out:
        out.writestr("gemini/2026-04-09_120000.000000_claude_to_gemini_0a1b2c3d.md",
                     b"not a message")
    with pytest.raises(Exception, match=r"not a message.*nothing was restored"):
        FileStore(root).restore_archived(None)
    assert owned.state_of("gemini", march.id) is None  # March was fine, and stays put
    assert sorted(p.name for p in (root / "archive").glob("*.zip")) == [
        "2026-03.zip", "2026-04.zip"]


def test_what_mailslot_archives_it_can_always_restore(
        owned: FileStore, root: Path, cli: Callable[..., object]) -> None:
    """A body of one repeated line deflates far past the ratio: it is stored unpacked;
    a message file past the size limit (imported, or sent under a higher limit) stays
    in done/ rather than in a zip a restore would refuse."""
    repeated = old_mail(owned, 1, body="same line\n" * 60_000)
    huge = old_mail(owned, 2, body="x" * (2 << 20))
    plain = old_mail(owned, 3)
    assert owned.archive_done("2026-04-01_000000", dry_run=True) == {"2026-03": 2}
    assert owned.archive_done("2026-04-01_000000") == {"2026-03": 2}
    with zipfile.ZipFile(root / "archive" / "2026-03.zip") as archive:
        names = {i.filename: i.compress_type for i in archive.infolist()}
    assert names == {f"gemini/{repeated.id}.md": zipfile.ZIP_STORED,
                     f"gemini/{plain.id}.md": zipfile.ZIP_DEFLATED}
    assert owned.state_of("gemini", huge.id) == "done"
    restored = cli("--agent", OWNER, "archive", "--restore", "--all")
    assert restored.code == 0, restored.err  # type: ignore[attr-defined]
    assert owned.load("gemini", repeated.id)[0] == repeated
