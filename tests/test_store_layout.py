"""The file store's layout: one reader of message files, whatever reads them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from mailslot.backends.files.file_store import FileStore
from mailslot.backends.files.fs import read_file
from mailslot.core.errors import NotFound, Unreadable
from mailslot.core.message import MAX_HEADER_BYTES, to_bytes
from support import make_message


def _plant(root: Path, agent: str, name: str, data: bytes) -> Path:
    folder = root / "agents" / agent / "new"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def test_the_file_name_not_the_header_says_which_message_it_is(root: Path) -> None:
    store = FileStore(root)
    real, other = make_message(subject="one"), make_message(subject="two")
    store.deliver(real, ["gemini"])
    _plant(root, "gemini", other.id, to_bytes(real))  # a copy under another name
    with pytest.raises(Unreadable, match="header names another id"):
        store.load("gemini", other.id)
    with pytest.raises(Unreadable, match="header names another id"):
        store.load("gemini", other.id, header_only=True)
    assert store.load("gemini", real.id)[0] == real


def test_a_header_without_end_is_read_once_and_bounded(root: Path) -> None:
    store = FileStore(root)
    message = make_message()
    path = _plant(root, "gemini", message.id, b"---\nid: x\n" + b"a" * (8 << 20))
    with pytest.raises(Unreadable, match="no complete"):
        store.load("gemini", message.id, header_only=True)
    with pytest.raises(Unreadable, match="no complete"):
        store.load("gemini", message.id)
    # A header read stops at the bound instead of reading (and searching) 8 MB.
    assert len(read_file(str(path), header_only=True)) <= MAX_HEADER_BYTES + 4096


def test_a_message_not_there_is_not_found(root: Path) -> None:
    store = FileStore(root)
    with pytest.raises(NotFound):
        store.load("gemini", make_message().id)
    assert not os.path.exists(root)


def test_a_file_read_again_unchanged_is_not_parsed_again(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-running server keeps what it parsed; a changed file is read anew."""
    from mailslot.backends.files import layout

    store = FileStore(root)
    message = make_message(subject="first")
    store.deliver(message, ["gemini"])
    parsed: list[str] = []
    real_parse = layout.parse_message_file
    monkeypatch.setattr(layout, "parse_message_file",
                        lambda *a: parsed.append(a[1]) or real_parse(*a))
    assert store.load("gemini", message.id)[0] == message
    assert store.load("gemini", message.id)[0] == message
    assert parsed == [message.id]
    # Rewritten in place (another subject, same size, a later mtime): parsed again.
    path = root / "agents" / "gemini" / "new" / f"{message.id}.md"
    path.write_bytes(path.read_bytes().replace(b"first", b"again"))
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000))
    assert store.load("gemini", message.id)[0].subject == "again"
    # A planted link is refused on every read, however often the real file was read.
    path.unlink()
    path.symlink_to(root / "elsewhere.md")
    with pytest.raises(Exception, match="symlink"):
        store.load("gemini", message.id)


def test_a_stale_state_hint_still_finds_the_message(root: Path) -> None:
    """A page loads each message where its listing saw it; one moved since
    (marked read by another process) is still found, in its new state."""
    store = FileStore(root)
    message = make_message()
    store.deliver(message, ["gemini"])
    assert store.load("gemini", message.id, state="unread")[1] == "unread"
    store.move("gemini", message.id, "read")
    assert store.load("gemini", message.id, state="unread") == (message, "read")
    with pytest.raises(NotFound):
        store.load("gemini", make_message().id, state="unread")


SOURCE = Path(__file__).resolve().parent.parent / "src" / "mailslot"


def _documented_top_names() -> set[str]:
    text = (SOURCE.parent.parent / "docs" / "format.md").read_text(encoding="utf-8")
    block = re.search(r"## Layout\n\n```\n(.*?)```", text, re.S)
    assert block is not None
    return {re.split(r"[/\s]", line)[0] for line in block[1].splitlines()
            if line and not line.startswith(" ")}


def _written_top_names() -> set[str]:
    """The first part of every folder the file store makes (``_folder("NAME", ...)``),
    and the folders other modules keep in the mailbox (the watcher's records, the
    wake bank, a host's sidecar file)."""
    from mailslot.backends.files.record_files import SPACES

    found = {m for path in (SOURCE / "backends" / "files").glob("*.py")
             for m in re.findall(r'_folder\(\s*"([a-z.-]+)"', path.read_text("utf-8"))}
    found |= {str(space.template[0]) for space in SPACES.values()}  # each namespace's files
    assert {"agents", "sessions", "wake", "registry"} <= found  # the sources were read
    kept = {"watchers.py": "watcher", "bank.py": "bank", "sidecar.py": "sidecars"}
    for name, folder in kept.items():
        path = next(SOURCE.rglob(name))
        assert f'"{folder}"' in path.read_text("utf-8"), (path, folder)
        found.add(folder)
    return found


def test_every_top_level_name_mailslot_writes_marks_a_mailbox() -> None:
    from mailslot.store.format import LAYOUT_NAMES

    assert _documented_top_names() <= LAYOUT_NAMES
    assert _written_top_names() <= LAYOUT_NAMES


@pytest.mark.parametrize("name", ["config.json", "agents", "tmp", "watcher"])
def test_a_folder_is_a_mailbox_when_empty_or_holding_its_names(tmp_path: Path,
                                                               name: str) -> None:
    folder = tmp_path / "box"
    assert not FileStore(folder).exists()  # missing
    folder.mkdir()
    assert FileStore(folder).exists()  # empty: as init leaves it
    (folder / "README.md").write_text("someone's project\n")
    assert not FileStore(folder).exists()  # a folder of other files
    (folder / name).mkdir()
    assert FileStore(folder).exists()
