"""The rules for touching a file in the mailbox: no links, regular files only, 0600/0700."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from mailslot.backends.files import fs
from mailslot.backends.files.file_store import FileStore
from mailslot.backends.files.fs import (
    Folders,
    append,
    file_names,
    ids_in,
    read_file,
    read_lines,
    write_new,
)
from mailslot.core.durable import remove
from mailslot.core.errors import StoreError, UnsafePath
from support import make_message


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_read_file_refuses_anything_but_a_regular_file_without_waiting(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"data")
    os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open would wait forever
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "file")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        assert read_file(str(tmp_path / "file")) == b"data"
        for name in ("fifo", "folder", "sock"):
            with pytest.raises(UnsafePath, match="is not a regular file"):
                read_file(str(tmp_path / name))
    with pytest.raises(UnsafePath, match="is a symlink"):
        read_file(str(tmp_path / "link"))
    with pytest.raises(FileNotFoundError):
        read_file(str(tmp_path / "missing"))
    assert read_lines(str(tmp_path / "missing")) == set()


def test_read_file_header_only_stops_after_the_header(tmp_path: Path) -> None:
    head = b"---\nid: x\n---\n"
    (tmp_path / "m").write_bytes(head + b"b" * 100_000)
    assert read_file(str(tmp_path / "m"), header_only=True).startswith(head)
    assert len(read_file(str(tmp_path / "m"), header_only=True)) < 100_000


def test_write_new_never_overwrites_and_leaves_no_half_file(tmp_path: Path) -> None:
    path = str(tmp_path / "new")
    write_new(path, b"first", sync=True)
    assert mode(tmp_path / "new") == 0o600
    with pytest.raises(FileExistsError):
        write_new(path, b"second", sync=False)
    assert (tmp_path / "new").read_bytes() == b"first"
    with pytest.raises(TypeError):
        write_new(str(tmp_path / "broken"), "not bytes", sync=False)  # type: ignore[arg-type]
    assert not (tmp_path / "broken").exists()


def test_append_adds_whole_records_and_never_writes_through_a_link(tmp_path: Path) -> None:
    path = str(tmp_path / "log")
    append(path, b"a\n", sync=False)
    append(path, b"b\n", sync=True)
    assert (tmp_path / "log").read_bytes() == b"a\nb\n" and mode(tmp_path / "log") == 0o600
    assert read_lines(path) == {"a", "b"}
    (tmp_path / "outside").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafePath, match="is a symlink"):
        append(str(tmp_path / "link"), b"x\n", sync=False)
    assert (tmp_path / "outside").read_text() == ""
    with pytest.raises(StoreError, match="cannot write"):
        append(str(tmp_path / "missing" / "log"), b"x\n", sync=False)


def test_remove_takes_the_link_itself_and_tolerates_gone(tmp_path: Path) -> None:
    (tmp_path / "target").write_text("kept")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert remove(str(tmp_path / "link")) is True
    assert remove(str(tmp_path / "link")) is False
    assert (tmp_path / "target").read_text() == "kept"


def test_folders_are_checked_part_by_part_and_made_0700(tmp_path: Path) -> None:
    root = tmp_path / "box"
    folders = Folders(str(root))
    assert folders._folder("agents", "gemini") == str(root / "agents")  # missing: not made
    assert not root.exists()
    assert folders._folder("agents", "gemini", create=True) == str(root / "agents/gemini")
    assert mode(root) == mode(root / "agents") == mode(root / "agents/gemini") == 0o700
    (tmp_path / "outside").mkdir()
    (root / "agents/linked").symlink_to(tmp_path / "outside")
    (root / "agents/file").write_text("x")
    with pytest.raises(UnsafePath, match="is a symlink"):
        Folders(str(root))._folder("agents", "linked", "new", create=True)
    with pytest.raises(UnsafePath, match="should be a folder"):
        Folders(str(root))._folder("agents", "file")
    assert os.listdir(tmp_path / "outside") == []


def test_listing_takes_regular_files_only(tmp_path: Path) -> None:
    m = make_message()
    (tmp_path / f"{m.id}.md").write_text("x")
    (tmp_path / "README.md").write_text("x")
    (tmp_path / f"{make_message(n=1).id}.md").symlink_to(tmp_path / "README.md")
    os.mkfifo(tmp_path / f"{make_message(n=2).id}.md")
    (tmp_path / f"{make_message(n=3).id}.md").mkdir()
    assert sorted(file_names(str(tmp_path))) == sorted([f"{m.id}.md", "README.md"])
    assert ids_in(str(tmp_path)) == [m.id]
    assert ids_in(str(tmp_path / "missing")) == []


def test_a_folder_listed_again_still_skips_what_was_added_since(tmp_path: Path) -> None:
    """A long-lived reader remembers which names are ids (from its second listing of a
    folder on); a stray file, a link or a FIFO planted since is skipped all the same,
    and mail that arrived or left since is listed as it is now."""
    first, second = make_message(), make_message(n=1)
    (tmp_path / f"{first.id}.md").write_text("x")
    for _ in range(3):  # the third listing is answered from what was remembered
        assert ids_in(str(tmp_path)) == [first.id]
    (tmp_path / f"{second.id}.md").write_text("x")
    (tmp_path / "README.md").write_text("x")
    (tmp_path / f"{make_message(n=2).id}.md").symlink_to(tmp_path / "README.md")
    os.mkfifo(tmp_path / f"{make_message(n=3).id}.md")
    for _ in range(2):
        assert sorted(ids_in(str(tmp_path))) == sorted([first.id, second.id])
    (tmp_path / f"{first.id}.md").unlink()
    (tmp_path / "README.md").unlink()
    assert ids_in(str(tmp_path)) == [second.id]


def test_a_long_lived_store_checks_its_folders_again(
        root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A watcher or waiter runs for a day: a folder swapped for a link since its first
    look is refused, not followed."""
    monkeypatch.setattr(fs, "RECHECK_SECONDS", 0.0, raising=False)  # "a second later"
    store = FileStore(root)
    store.deliver(make_message(n=1), ["gemini"])
    outside = tmp_path / "outside"
    outside.mkdir()
    new = root / "agents" / "gemini" / "new"
    for name in os.listdir(new):
        os.unlink(new / name)
    new.rmdir()
    new.symlink_to(outside)
    with pytest.raises(UnsafePath, match="symlink"):
        store.deliver(make_message(n=2), ["gemini"])
    assert os.listdir(outside) == []
