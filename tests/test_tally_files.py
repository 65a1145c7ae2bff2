"""The file store's tallies and sent indexes: counts kept as mail moves, right with two
processes at once, found wrong when the folders changed behind them, written by a
reader only to keep the listing of a settled unread folder, counted again by ``doctor
--fix``; and ``doctor`` bounded by default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.backends.files.kept_listing import read_kept, stamp_of
from support import make_message, snapshot

_MOVER = """
import sys
from mailslot import FileStore
store = FileStore(sys.argv[1])
for message_id in sys.argv[2:]:
    store.move("gemini", message_id, "done")
"""


def _deliver(store: FileStore, count: int, sender: str = "claude") -> list[str]:
    ids = []
    for n in range(count):
        m = make_message(sender=sender, n=n)
        store.deliver(m, ["gemini"])
        ids.append(m.id)
    return ids


def test_two_processes_moving_mail_to_done_at_once_lose_no_count(root: Path) -> None:
    store = FileStore(root)
    ids = _deliver(store, 120)
    halves = [ids[0::2], ids[1::2]]
    movers = [subprocess.Popen([sys.executable, "-c", _MOVER, str(root), *half])
              for half in halves]
    assert [p.wait(timeout=120) for p in movers] == [0, 0]
    record = json.loads((root / "tally" / "gemini.json").read_text())
    assert record["done"][0] == 120  # counted by the movers, not listed afterwards
    assert store.count_done("gemini") == 120
    assert store.problems(deep=True) == []


def test_a_tally_the_folder_moved_past_is_found_and_counted_again(root: Path) -> None:
    store = FileStore(root)
    ids = _deliver(store, 4)
    for i in ids[:2]:
        store.move("gemini", i, "done")
    os.rename(root / "agents/gemini/new" / f"{ids[2]}.md",
              root / "agents/gemini/done" / f"{ids[2]}.md")  # by hand: no tally change
    assert store.count_done("gemini") == 3  # the stamp no longer matches: listed
    [problem] = store.problems()
    assert "tally/gemini.json does not match gemini's mailbox" in problem
    before = snapshot(root)
    Mailbox(store, Identity("gemini", "--agent")).inbox()
    assert snapshot(root) == before  # a reader writes nothing
    fixed = Mailbox(store, None).doctor(fix=True)
    assert any("counted" in f for f in fixed.fixed) and fixed.problems == []
    assert store.problems() == [] and store.count_done("gemini") == 3


def test_an_empty_inbox_says_how_many_are_done_from_the_tally(root: Path) -> None:
    store = FileStore(root)
    box = Mailbox(store, Identity("gemini", "--agent"))
    for i in _deliver(store, 3):
        box.done([i])
    page = box.page()
    assert (list(page.items), page.done_hidden) == ([], 3)


def test_sent_is_read_from_the_newest_end_and_a_missing_index_is_built_by_a_send(
        root: Path) -> None:
    store = FileStore(root)
    ids = _deliver(store, 5)
    assert store.sent_ids("claude", 2) == ids[::-1][:2]
    (root / "sent" / "claude").unlink()  # as in a mailbox from before the index
    before = snapshot(root)
    assert store.sent_ids("claude") == ids[::-1]  # listed; nothing written
    assert snapshot(root) == before
    later = make_message(n=10)
    store.deliver(later, ["gemini"])
    lines = (root / "sent" / "claude").read_text().split()
    assert lines[:2] == ["#", "complete"] and sorted(lines[2:]) == sorted([*ids, later.id])
    assert (root / "sent" / "claude").stat().st_mode & 0o777 == 0o600


def test_a_short_form_names_open_mail_before_done_mail(root: Path) -> None:
    store = FileStore(root)
    box = Mailbox(store, Identity("gemini", "--agent"))
    old, new = make_message(n=1), make_message(n=2)
    twin = new.id[:-8] + old.id[-8:]  # the same random tail as old, newer
    new = type(new)(twin, new.date, new.sender, new.to, new.subject, new.body)
    store.deliver(old, ["gemini"])
    store.deliver(new, ["gemini"])
    box.done([old.id])
    assert box.resolve_id(old.id[-8:]) == new.id  # open mail first
    [item] = box.inbox()
    assert item.short == old.id[-8:]  # unique among open mail: the tail is shown


def test_doctor_is_bounded_by_default_and_deep_looks_at_every_file(root: Path,
                                                                   tmp_path: Path) -> None:
    store = FileStore(root)
    box = Mailbox(store, Identity("gemini", "--agent"))
    for i in _deliver(store, 3):
        box.done([i])
    planted = root / "agents/gemini/done" / "stray.md"
    planted.symlink_to(tmp_path)
    admin = Mailbox(store, None)
    report = admin.doctor()  # sees the folder changed (the tally's stamp), not the link
    assert not report.deep and not any("symlink" in p for p in report.problems)
    deep = admin.doctor(deep=True)
    assert any(f"{planted} is a symlink" in p for p in deep.problems)


def _settle(folder: Path) -> None:
    """Make ``folder`` look unchanged for a minute (what waiting would show)."""
    info = folder.stat()
    os.utime(folder, ns=(info.st_atime_ns, info.st_mtime_ns - 60_000_000_000))


def test_who_keeps_the_listing_of_a_settled_unread_folder_and_sees_any_change(
        root: Path) -> None:
    store = FileStore(root)
    ids = _deliver(store, 5)
    new = root / "agents/gemini/new"
    kept = root / "tally/gemini.unread.ids"
    assert store.count_unread("gemini", 2) == (5, sorted(ids)[:2])
    assert not kept.exists()  # not settled: a change within the clock's tick could hide
    _settle(new)
    store.count_unread("gemini", 2)  # listed once more, and kept
    stamp = new.stat()
    assert kept.read_text().splitlines() == [
        f"# listing {stamp.st_ino} {stamp.st_mtime_ns} 5", *sorted(ids)]
    # Proof that the next look lists nothing: a file put there by hand, the folder's
    # time set back, is not seen; the first real change is.
    hidden = make_message(sender="codex", n=50)
    (new / f"{hidden.id}.md").write_bytes((new / f"{ids[0]}.md").read_bytes())
    os.utime(new, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert store.count_unread("gemini", 9) == (5, sorted(ids))
    assert sorted(store.entries("gemini", ["unread"])) == [(i, "unread") for i in sorted(ids)]
    assert store.problems(deep=True) != []  # --deep lists the folder and sees the lie
    os.unlink(new / f"{hidden.id}.md")
    os.utime(new, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    later = _deliver(store, 1, sender="codex")  # a delivery moves the folder's time on
    assert store.count_unread("gemini", 9) == (6, sorted([*ids, *later]))
    store.move("gemini", ids[0], "read")
    assert store.count_unread("gemini", 1) == (5, sorted([*ids[1:], *later])[:1])
    assert store.problems(deep=True) == []


def test_the_inbox_and_the_hook_read_a_settled_read_folder_from_its_kept_listing(
        root: Path) -> None:
    store = FileStore(root)
    ids = _deliver(store, 4)
    for i in ids:
        store.move("gemini", i, "read")
    cur = root / "agents/gemini/cur"
    _settle(cur)
    box = Mailbox(store, Identity("gemini", "--agent"))
    assert [item.message.id for item in box.inbox()] == sorted(ids, reverse=True)
    assert (root / "tally/gemini.read.ids").exists()
    stamp = cur.stat()
    os.unlink(cur / f"{ids[0]}.md")  # by hand, the folder's time set back: not seen
    os.utime(cur, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert sorted(i for i, _ in store.entries("gemini", ["read"])) == sorted(ids)
    # The page loads what it shows: a message gone from under the listing is skipped.
    assert [item.message.id for item in box.inbox()] == sorted(ids[1:], reverse=True)
    store.move("gemini", ids[1], "done")  # a real change: listed again
    assert sorted(i for i, _ in store.entries("gemini", ["read"])) == sorted(ids[2:])


@pytest.mark.parametrize("planted", [
    b"# listing {ino} {mtime} 1\n../../../etc/passwd\n",  # a path out of the folder
    b"# listing {ino} {mtime} 9\nx\n",  # torn: fewer ids than its count
    b"# listing {ino} {mtime} 1\nzz \x1b[31mred\n",  # no id holds a space or an escape
    b"# listing {ino} {mtime}\n",  # not a listing
    b"\0\0\0",
])
def test_a_kept_listing_that_is_torn_or_names_a_path_is_not_believed(
        root: Path, planted: bytes) -> None:
    store = FileStore(root)
    ids = _deliver(store, 2)
    new = root / "agents/gemini/new"
    _settle(new)
    info = new.stat()
    (root / "tally").mkdir(mode=0o700, exist_ok=True)
    (root / "tally/gemini.unread.ids").write_bytes(
        planted.replace(b"{ino}", str(info.st_ino).encode())
        .replace(b"{mtime}", str(info.st_mtime_ns).encode()))
    assert store.count_unread("gemini", 5) == (2, sorted(ids))
    assert sorted(i for i, _ in store.entries("gemini", ["unread"])) == sorted(ids)


def test_a_listing_that_cannot_be_kept_is_listed_each_time(root: Path) -> None:
    store = FileStore(root)
    ids = _deliver(store, 3)
    _settle(root / "agents/gemini/new")
    (root / "tally").mkdir(mode=0o700, exist_ok=True)
    (root / "tally/gemini.unread.ids").mkdir()  # in the way of the rename
    assert store.count_unread("gemini", 1) == (3, sorted(ids)[:1])
    assert store.count_unread("gemini") == (3, [])
    assert not any(p.name.startswith("listing-") for p in (root / "tmp").iterdir())


def test_a_move_killed_within_the_clock_tick_of_the_last_leaves_no_trusted_count(
        root: Path) -> None:
    store = FileStore(root)
    ids = _deliver(store, 3)
    store.move("gemini", ids[0], "done")
    done = root / "agents/gemini/done"
    stamp = done.stat()

    def killed() -> tuple[None, int]:
        os.rename(root / "agents/gemini/new" / f"{ids[1]}.md", done / f"{ids[1]}.md")
        os.utime(done, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # the same tick
        raise KeyboardInterrupt  # killed before the count is written

    with pytest.raises(KeyboardInterrupt):
        store.with_tally("gemini", killed)
    assert store.count_done("gemini") == 2  # listed: the tally says it was changing
    store.move("gemini", ids[2], "done")
    assert json.loads((root / "tally/gemini.json").read_text())["done"][0] == 3
    assert store.problems(deep=True) == []


def test_default_doctor_still_sees_a_link_planted_in_a_settled_open_folder(
        root: Path, tmp_path: Path) -> None:
    store = FileStore(root)
    ids = _deliver(store, 3)
    new = root / "agents/gemini/new"
    planted = new / "zz-planted.md"
    planted.symlink_to(tmp_path)
    _settle(new)
    for _ in range(2):  # the second look would use a kept listing, were one kept
        assert store.count_unread("gemini") == (3, [])
        assert any(f"{planted} is a symlink" in p for p in store.problems())
    assert not (root / "tally/gemini.unread.ids").exists()
    planted.unlink()
    _settle(new)
    assert store.problems() == [] and (root / "tally/gemini.unread.ids").exists()
    assert sorted(i for i, _ in store.entries("gemini", ["unread"])) == sorted(ids)


class _DeliveryBetweenSteps:
    """Just before the ``at``-th time a reader looks at ``new/`` (its stamp, its listing,
    any check), delivers a message there and moves the oldest unread one to ``cur/`` (so
    the count stays the same), then makes the folder look settled again, as 2 s of quiet
    would: a change forced between any two steps of a keeper."""

    def __init__(self, root: Path, unread: list[str], monkeypatch: pytest.MonkeyPatch
                 ) -> None:
        self.folder = str(root / "agents/gemini/new")
        self.other = FileStore(root)  # another store object, as another process has
        self.unread = unread  # kept as it changes
        self.at = -1
        self.steps = 0
        self.changes = 0
        for call in ("lstat", "stat", "scandir", "listdir"):
            monkeypatch.setattr(os, call, self._step_before(getattr(os, call)))

    def _step_before(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def step(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            if os.fspath(path) == self.folder and self.at >= 0:
                if self.steps == self.at:
                    self.at = -1  # one change per look (and no step taken by the change)
                    self._change()
                self.steps += 1
            return real(path, *args, **kwargs)
        return step

    def _change(self) -> None:
        message = make_message(sender="codex", n=1000 + self.changes)
        self.other.deliver(message, ["gemini"])
        self.other.move("gemini", min(self.unread), "read")
        self.unread.remove(min(self.unread))
        self.unread.append(message.id)
        self.changes += 1
        _settle(Path(self.folder))

    def look(self, store: FileStore, at: int) -> bool:
        """One reader's look with the change before its ``at``-th step; whether the look
        took that many steps (so the change happened inside it)."""
        self.at, self.steps, before = at, 0, self.changes
        store.entries("gemini", ["unread"])
        self.at = -1
        return self.changes > before


def test_a_listing_kept_beside_deliveries_never_hides_one(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader finds the folder settled and its listing stale, lists and keeps; a
    delivery (and a move out) is forced before each of its steps in turn, so one lands
    between its listing and whatever it stamps the listing with: every look after that
    shows the folder as it is."""
    store = FileStore(root)
    unread = _deliver(store, 3)
    new = root / "agents/gemini/new"
    interleave = _DeliveryBetweenSteps(root, unread, monkeypatch)
    at = 0
    while True:
        _settle(new)  # settled, and its kept listing (if any) stale
        if not interleave.look(FileStore(root), at):
            break  # past the reader's last step
        for _ in range(2):  # the next look lists (and keeps), the one after may read it
            reader = FileStore(root)
            assert sorted(i for i, _ in reader.entries("gemini", ["unread"])) == sorted(unread)
            assert reader.count_unread("gemini", 3) == (3, sorted(unread))
        at += 1
    assert at >= 4  # its stamp, its listing and the checks after it were each interleaved
    assert read_kept(str(root / "tally/gemini.unread.ids"), stamp_of(str(new))) is not None
    assert store.problems(deep=True) == []
