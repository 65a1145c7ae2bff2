"""The file store: layout, permissions, crash-safe writes, moves, and refusing links."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import Mailbox
from mailslot.backends.files import layout
from mailslot.backends.files.file_store import FileStore
from mailslot.core.errors import IdTaken, NotFound, StoreError, UnsafePath
from mailslot.core.message import to_bytes
from mailslot.store import StoredFile
from support import files_in, make_message, put_config


@pytest.fixture
def store(root: Path) -> FileStore:
    return FileStore(root)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_deliver_links_one_file_per_recipient_and_leaves_no_staging(
    store: FileStore, root: Path
) -> None:
    m = make_message(to=("gemini", "codex"))
    store.deliver(m, ["gemini", "codex"])
    for agent in ("gemini", "codex"):
        path = root / "agents" / agent / "new" / f"{m.id}.md"
        assert path.read_bytes() == to_bytes(m)
        assert mode(path) == 0o600
    assert os.stat(root / "agents/gemini/new" / f"{m.id}.md").st_nlink == 2  # one write
    assert files_in(root / "tmp") == []
    for folder in (root, root / "agents", root / "agents/gemini", root / "agents/gemini/new",
                   root / "tmp"):
        assert mode(folder) == 0o700


def test_deliver_never_overwrites_an_existing_id(store: FileStore, root: Path) -> None:
    m = make_message(body="first")
    store.deliver(m, ["gemini"])
    with pytest.raises(IdTaken, match="already taken in gemini's mailbox"):
        store.deliver(m.replace(body="second"), ["gemini"])
    assert store.load("gemini", m.id)[0].body == "first"
    assert files_in(root / "tmp") == []


def test_entries_load_and_state_of(store: FileStore) -> None:
    a, b = make_message(n=1), make_message(n=2)
    store.deliver(a, ["gemini"])
    store.deliver(b, ["gemini"])
    assert sorted(store.entries("gemini", ["unread"])) == [(a.id, "unread"), (b.id, "unread")]
    assert store.entries("gemini", ["read", "done"]) == []
    assert store.entries("nobody", ["unread"]) == []
    assert store.load("gemini", a.id) == (a, "unread")
    assert store.load("gemini", a.id, header_only=True)[0].body == ""
    assert store.state_of("gemini", a.id) == "unread"
    assert store.state_of("codex", a.id) is None
    with pytest.raises(NotFound):
        store.load("codex", a.id)


def test_a_move_is_a_rename_between_the_state_folders(store: FileStore, root: Path) -> None:
    """(Forward only and idempotent: the store contract, test_store_contract.py.)"""
    m = make_message()
    store.deliver(m, ["gemini"])
    store.move("gemini", m.id, "done")
    assert files_in(root / "agents/gemini/new") == files_in(root / "agents/gemini/cur") == []
    assert store.path_of("gemini", m.id) == str(root / "agents/gemini/done" / f"{m.id}.md")
    with pytest.raises(NotFound):
        store.move("codex", m.id, "done")


def synced_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file or folder ``fsync``/``fdatasync`` is called on from now on, by path.

    No power can be cut here; what a power cut keeps is what was synced, so the tests
    assert the syncs themselves."""
    synced: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def tracing(fd: int, real: Callable[[int], None] = real) -> None:
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
            real(fd)

        monkeypatch.setattr(os, name, tracing)
    return synced


def test_a_read_and_a_done_are_synced_before_they_return(
        root: Path, box: Callable[[str | None], Mailbox], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read or done that was acknowledged survives a power cut: the folder it was
    renamed into and the folder it left are synced, and so is its receipt, as a send
    syncs the folders it links into."""
    sent = box("claude").send("gemini", "s", "x")
    synced = synced_paths(monkeypatch)
    gemini = box("gemini")
    gemini.read(sent.id)
    folders = root.resolve() / "agents" / "gemini"
    log = str(root.resolve() / "log" / "events.jsonl")
    assert str(folders / "cur") in synced and str(folders / "new") in synced
    assert log in synced[synced.index(str(folders / "cur")):]  # the receipt after the move
    synced.clear()
    gemini.done([sent.id])
    assert str(folders / "done") in synced and str(folders / "cur") in synced
    assert log in synced[synced.index(str(folders / "done")):]


def test_a_retracted_broadcast_is_synced_in_the_folder_it_moved_to(
        store: FileStore, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = make_message(to=("all",))
    store.publish(m)
    synced = synced_paths(monkeypatch)
    store.retract(m.id)
    broadcast = root.resolve() / "broadcast"
    assert str(broadcast / "retracted") in synced and str(broadcast / "live") in synced


def test_stray_files_and_folders_are_not_messages(store: FileStore, root: Path) -> None:
    m = make_message()
    store.deliver(m, ["gemini"])
    new = root / "agents/gemini/new"
    (new / "README.md").write_text("notes")
    (new / f"{m.id}.md.swp").write_text("editor")
    (new / "2026-01-01_000000.000000_x_to_y_s_abcdef.md").mkdir()
    assert store.entries("gemini", ["unread"]) == [(m.id, "unread")]


def test_broadcasts_publish_retract_and_load(store: FileStore, root: Path) -> None:
    m = make_message(to=("all",))
    store.publish(m)
    assert store.broadcast_ids() == [m.id] and store.broadcast_ids(live=False) == []
    assert store.load_broadcast(m.id) == (m, True)
    assert store.retract(m.id) is True
    assert store.retract(m.id) is False
    assert store.broadcast_ids() == [] and store.broadcast_ids(live=False) == [m.id]
    assert store.load_broadcast(m.id) == (m, False)
    with pytest.raises(NotFound):
        store.retract(make_message(n=5).id)
    with pytest.raises(NotFound):
        store.load_broadcast(make_message(n=5).id)


def test_seen_sets_are_appended_and_synced(store: FileStore, root: Path) -> None:
    assert store.seen("gemini") == set()
    store.add_seen("gemini", ["a", "b"])
    store.add_seen("gemini", ["b"])
    store.add_seen("gemini", [])
    assert store.seen("gemini") == {"a", "b"}
    assert (root / "broadcast/seen/gemini").read_text() == "a\nb\nb\n"
    assert mode(root / "broadcast/seen/gemini") == 0o600


def test_agent_names_are_real_folders_only(store: FileStore, root: Path) -> None:
    assert store.agent_names() == []
    store.deliver(make_message(to=("gemini",)), ["gemini"])
    store.deliver(make_message(to=("codex",), n=1), ["codex"])
    (root / "agents/stray.txt").write_text("x")
    (root / "agents/linked").symlink_to(root / "agents/codex")
    assert store.agent_names() == ["codex", "gemini"]


def test_events_are_appended_and_cut_lines_skipped(store: FileStore, root: Path) -> None:
    store.append_event({"event": "delivered", "id": "a"})
    with (root / "log/events.jsonl").open("a") as log:
        log.write('{"event": "read", "id"')  # a line cut by a crash
        log.write("\n[1, 2]\n")
    store.append_event({"event": "done", "id": "a", "note": "é"})
    assert list(store.events()) == [{"event": "delivered", "id": "a"},
                                     {"event": "done", "id": "a", "note": "é"}]
    assert mode(root / "log/events.jsonl") == 0o600


def test_no_events_yet(store: FileStore) -> None:
    assert list(store.events()) == []


def test_config_missing_saved_atomically_and_reloaded(store: FileStore, root: Path) -> None:
    assert store.load_config() == {}
    put_config(store, {"owner": "sarah", "x-unknown": [1]})
    assert store.load_config() == {"owner": "sarah", "x-unknown": [1]}
    assert mode(root / "config.json") == 0o600
    assert files_in(root / "tmp") == []


@pytest.mark.parametrize(("text", "why"), [("{", "not valid JSON"), ("[]", "JSON object"),
                                           ("\udcff", "not valid JSON")])
def test_unreadable_config_is_a_store_error(
    store: FileStore, root: Path, text: str, why: str
) -> None:
    root.mkdir()
    (root / "config.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(StoreError, match=why):
        store.load_config()


def test_staging_lists_and_removes_leftovers(store: FileStore, root: Path) -> None:
    assert store.staging() == []
    (root / "tmp").mkdir(parents=True)
    leftover = root / "tmp" / "half-written"
    leftover.write_text("x")
    os.utime(leftover, (0, 0))
    [item] = store.staging()
    assert item.path == str(leftover) and item.age_seconds > 50 * 365 * 86400
    store.remove_staging(item)
    assert store.staging() == []


def test_problems_and_fix_permissions(store: FileStore, root: Path) -> None:
    m = make_message()
    store.deliver(m, ["gemini"])
    assert store.problems() == []
    path = root / "agents/gemini/new" / f"{m.id}.md"
    path.chmod(0o644)
    (root / "agents").chmod(0o755)
    (root / "agents/gemini/cur").mkdir(mode=0o700)
    broken = root / "agents/gemini/cur" / f"{make_message(n=3).id}.md"
    broken.write_text("not a message")
    broken.chmod(0o600)
    (root / "agents/gemini/done").symlink_to("/")
    found = store.problems()
    assert any(str(path) in p and "mode 644" in p for p in found)
    assert any(p.startswith(str(root / "agents")) and "mode 755" in p for p in found)
    assert not any("not a message file" in p for p in found)  # problems() reads no message
    assert [why for _, _, why in store.unreadable()] == [f"{broken}: not a message file "
                                                          "(no complete '---' header)"]
    assert any("agents/gemini/done is a symlink" in p for p in found)
    assert store.fix_permissions() == 2
    assert mode(path) == 0o600 and mode(root / "agents") == 0o700
    assert len(store.problems()) == 1  # the link stays for a person


# Links are never followed -------------------------------------------------------------
def test_a_linked_agent_folder_is_refused_before_anything_is_written(
    store: FileStore, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "agents/gemini").mkdir(parents=True)
    (root / "agents/gemini/new").symlink_to(outside)
    with pytest.raises(UnsafePath, match="symlink"):
        store.deliver(make_message(to=("codex", "gemini")), ["codex", "gemini"])
    assert files_in(outside) == []
    assert files_in(root / "agents") == ["gemini"]  # codex's folder was not even made
    assert files_in(root / "tmp") == []
    with pytest.raises(UnsafePath):
        store.entries("gemini", ["unread"])


def test_a_linked_message_file_is_skipped_when_listing_and_refused_when_read(
    store: FileStore, root: Path, tmp_path: Path
) -> None:
    real = make_message(n=1)
    store.deliver(real, ["gemini"])
    planted = make_message(sender="owner", n=2)
    target = tmp_path / "outside.md"
    target.write_bytes(to_bytes(planted))
    (root / "agents/gemini/new" / f"{planted.id}.md").symlink_to(target)
    assert store.entries("gemini", ["unread"]) == [(real.id, "unread")]
    with pytest.raises(UnsafePath, match="symlink"):
        store.load("gemini", planted.id)
    with pytest.raises(UnsafePath, match="symlink"):
        store.move("gemini", planted.id, "done")
    assert target.read_bytes() == to_bytes(planted)


def test_a_linked_log_or_seen_file_is_never_written_through(
    store: FileStore, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.write_text("")
    (root / "log").mkdir(parents=True)
    (root / "log/events.jsonl").symlink_to(outside)
    (root / "broadcast/seen").mkdir(parents=True)
    (root / "broadcast/seen/gemini").symlink_to(outside)
    with pytest.raises(UnsafePath):
        store.append_event({"event": "x"})
    with pytest.raises(UnsafePath):
        store.add_seen("gemini", ["a"])
    with pytest.raises(UnsafePath):
        store.seen("gemini")
    assert outside.read_text() == ""


def test_a_linked_config_is_refused(store: FileStore, root: Path, tmp_path: Path) -> None:
    (tmp_path / "evil.json").write_text(json.dumps({"owner": "mallory"}))
    root.mkdir()
    (root / "config.json").symlink_to(tmp_path / "evil.json")
    with pytest.raises(UnsafePath):
        store.load_config()


def test_a_folder_where_a_file_should_be_is_refused(store: FileStore, root: Path) -> None:
    m = make_message()
    (root / "agents/gemini/new" / f"{m.id}.md").mkdir(parents=True)
    assert store.entries("gemini", ["unread"]) == []
    with pytest.raises(UnsafePath, match="not a regular file"):
        store.load("gemini", m.id)


def test_a_file_where_a_folder_should_be_is_refused(store: FileStore, root: Path) -> None:
    (root / "agents").mkdir(parents=True)
    (root / "agents/gemini").write_text("x")
    with pytest.raises(UnsafePath, match="should be a folder"):
        store.deliver(make_message(), ["gemini"])


def test_a_long_header_is_read_whole_in_header_only_mode(store: FileStore) -> None:
    m = make_message(subject="s" * 200)
    long_head = m.replace(re_issue="r" * 6000, body="b" * 10_000)
    store.deliver(long_head, ["gemini"])
    loaded, _ = store.load("gemini", m.id, header_only=True)
    assert loaded.re_issue == "r" * 6000 and loaded.body == ""


def test_staging_lists_regular_files_only_and_removes_nothing_else(
    store: FileStore, root: Path, tmp_path: Path
) -> None:
    (root / "tmp/folder").mkdir(parents=True)
    (root / "tmp/link").symlink_to(tmp_path)
    os.mkfifo(root / "tmp/fifo")
    (root / "tmp/file").write_text("x")
    [item] = store.staging()
    assert item.path == str(root / "tmp/file")
    for name in ("folder", "link", "fifo"):
        with pytest.raises(UnsafePath, match="not a staging file"):
            store.remove_staging(StoredFile(str(root / "tmp" / name), 1e9))
    store.remove_staging(item)
    store.remove_staging(item)  # gone already: fine
    assert files_in(root / "tmp") == ["fifo", "folder", "link"]


def test_the_events_log_rolls_into_numbered_segments_and_loses_no_line(
        store: FileStore, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "SEGMENT_BYTES", 200)
    for n in range(40):
        store.append_event({"event": "read", "id": f"m{n}"})
    names = sorted(files_in(root / "log"))
    assert "events.000001.jsonl" in names and "events.000002.jsonl" in names
    assert all(os.path.getsize(root / "log" / n) < 400 for n in names if n.startswith("events"))
    assert [e["id"] for e in store.events()] == [f"m{n}" for n in range(40)]
    newest = [e["id"] for e in store.events(newest_first=True)]
    assert newest == [f"m{n}" for n in reversed(range(40))]


def test_the_newest_events_are_read_from_the_logs_end_whole_and_in_order(
        store: FileStore, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(3000):  # lines of every length, across many blocks of the read
        store.append_event({"event": "read", "id": f"m{n}", "pad": "é" * (n % 97)})
    lines = (root / "log" / "events.jsonl").read_bytes()
    (root / "log" / "events.jsonl").write_bytes(lines + b'{"event": "cut')  # by a crash
    newest = [e["id"] for e in store.events(newest_first=True)]
    assert newest == [f"m{n}" for n in reversed(range(3000))]
    (root / "log" / "events.jsonl").write_bytes(lines * 20)  # 8 MiB or so, one segment
    read: list[int] = []
    for call in ("read", "pread"):  # every way to read a file: count what is asked for
        real = getattr(os, call)
        monkeypatch.setattr(os, call, lambda *a, real=real: read.append(a[1]) or real(*a))
    taken = store.events(newest_first=True)
    assert [next(taken)["id"] for _ in range(10)] == [f"m{n}" for n in range(2999, 2989, -1)]
    taken.close()
    assert sum(read) <= 64 << 10  # a reader stopping early read the log's end alone


def test_a_listing_of_records_never_goes_through_a_planted_link(
        store: FileStore, root: Path, tmp_path: Path) -> None:
    """A namespace's folders are listed only where they are real folders: a link planted
    as a gate's members or as an agent's sessions folder leads the listing nowhere."""
    store.set_member("gemini", "claude", True)
    store.add_shown("gemini", "s1", ["x"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mallory").write_text("")
    (elsewhere / "s2").write_text("y\n")
    (root / "gates" / "evil").mkdir(mode=0o700)
    (root / "gates" / "evil" / "members").symlink_to(elsewhere)
    (root / "sessions" / "bob").symlink_to(elsewhere)
    assert store.keys("members") == [("gemini", "claude")]
    assert list(store.touched("shown")) == [("gemini", "s1")]
    assert store.items("shown") == {("gemini", "s1"): {"x"}}
