"""The file store's search index: derived, disposable, never the reason a send fails."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import FileStore, Mailbox
from mailslot.core.query import Search, parse
from support import make_message

Box = Callable[[str | None], Mailbox]


def find(root: Path, query: str) -> list[str]:
    return FileStore(root).search(Search(match=parse(query)))


def _modes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): stat.S_IMODE(os.lstat(p).st_mode)
            for p in [folder, *folder.rglob("*")]}


def test_the_index_is_private_and_doctor_finds_nothing_wrong(box: Box, root: Path) -> None:
    sent = box("claude").send("gemini", "hello", "words to find")
    # A send only appends a line to a private log; the search then indexes it.
    assert _modes(root / "index") == {".": 0o700, "new.log": 0o600}
    assert (root / "index" / "new.log").read_text() == f"{sent.id} gemini\n"
    assert find(root, "words") == [sent.id]
    assert _modes(root / "index") == {".": 0o700, "new.log": 0o600, "search.sqlite": 0o600}
    assert (root / "index" / "new.log").read_bytes() == b""
    assert box("claude").doctor().healthy


def test_a_send_never_opens_the_index_and_the_next_search_finds_it(
        box: Box, root: Path) -> None:
    first = box("claude").send("gemini", "first", "alpha")
    assert find(root, "alpha") == [first.id]
    indexed = (root / "index" / "search.sqlite").read_bytes()
    later = [box("claude").send("gemini", f"later {n}", "alpha beta") for n in range(3)]
    assert (root / "index" / "search.sqlite").read_bytes() == indexed  # untouched
    assert sorted(find(root, "beta")) == sorted(m.id for m in later)
    assert (root / "index" / "new.log").read_bytes() == b""


def test_a_broadcast_and_a_message_to_several_are_indexed_once(box: Box, root: Path
                                                               ) -> None:
    news = box("claude").broadcast("news", "shared words")
    many = box("claude").send(["gemini", "codex"], "many", "shared words", new=True)
    assert (root / "index" / "new.log").read_text() == (
        f"{news.id} *\n{many.id} gemini codex\n")
    assert sorted(find(root, "shared")) == sorted([news.id, many.id])


def test_a_line_that_cannot_be_written_marks_the_index_stale_and_loses_nothing(
        box: Box, root: Path, tmp_path: Path) -> None:
    box("claude").send("gemini", "first", "alpha")
    shutil.rmtree(root / "index")
    (root / "index").mkdir(mode=0o700)
    (root / "index" / "new.log").symlink_to(tmp_path / "elsewhere.log")
    second = box("claude").send("gemini", "second", "alpha gamma")  # delivered regardless
    assert not (tmp_path / "elsewhere.log").exists()  # the link was not followed
    assert (root / "index" / "stale").exists()
    (root / "index" / "new.log").unlink()
    assert find(root, "gamma") == [second.id]  # the stale index was rebuilt first
    assert not (root / "index" / "stale").exists()


def test_a_broken_index_never_fails_a_send_and_the_next_search_rebuilds(
        box: Box, root: Path) -> None:
    first = box("claude").send("gemini", "first", "alpha")
    assert find(root, "alpha") == [first.id]
    index = root / "index" / "search.sqlite"
    index.write_bytes(b"this is not a database" * 100)
    second = box("claude").send("gemini", "second", "alpha beta")  # succeeds regardless
    assert sorted(find(root, "alpha")) == sorted([first.id, second.id])  # replaced
    assert not (root / "index" / "stale").exists()
    assert (root / "index" / "new.log").read_bytes() == b""


def test_a_locked_index_never_holds_up_a_send_and_a_search_answers_saying_what_it_missed(
        box: Box, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    box("claude").send("gemini", "first", "alpha")
    assert find(root, "alpha") != []
    monkeypatch.setattr("mailslot.backends.files.search_index._BUSY_MS", 50)
    holder = sqlite3.connect(root / "index" / "search.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        late = box("claude").send("gemini", "late", "alpha gamma")
        store = FileStore(root)
        assert store.search(Search(match=parse("gamma"))) == []
        assert store.unsearched() == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert find(root, "gamma") == [late.id]


def test_messages_copied_in_by_hand_are_found_after_a_rebuild(
        cli: Callable[..., object], root: Path, tmp_path: Path) -> None:
    other = FileStore(tmp_path / "elsewhere")
    m = make_message(subject="copied", body="handwritten words")
    other.deliver(m, ["gemini"])
    assert find(root, "handwritten") == []  # no mailbox yet
    FileStore(root).deliver(make_message(n=5), ["gemini"])
    assert find(root, "handwritten") == []  # the index now exists
    target = root / "agents" / "gemini" / "new"
    shutil.copy(tmp_path / "elsewhere" / "agents" / "gemini" / "new" / f"{m.id}.md", target)
    assert find(root, "handwritten") == []  # the index does not know it yet
    result = cli("--agent", "gemini", "index", "--rebuild")
    assert result.code == 0 and "2 message(s)" in result.out  # type: ignore[attr-defined]
    assert find(root, "handwritten") == [m.id]


def test_deleting_the_index_loses_nothing(box: Box, root: Path) -> None:
    sent = box("claude").send("gemini", "keep", "durable words")
    shutil.rmtree(root / "index")
    assert find(root, "durable") == [sent.id]


def test_a_planted_link_for_the_index_is_refused(box: Box, root: Path, tmp_path: Path
                                                  ) -> None:
    box("claude").send("gemini", "x", "y")
    shutil.rmtree(root / "index")
    (root / "index").mkdir(mode=0o700)
    (root / "index" / "search.sqlite").symlink_to(tmp_path / "elsewhere.db")
    sent = box("claude").send("gemini", "still", "delivered")  # the send is not hurt
    assert box("gemini").read(sent.id).message.body == "delivered"
    assert not (tmp_path / "elsewhere.db").exists()


def test_accents_and_case_are_ignored_and_prefixes_use_the_index(box: Box, root: Path
                                                                  ) -> None:
    sent = box("claude").send("gemini", "Café RÉSUMÉ", "Naïve approach")
    assert find(root, "cafe") == find(root, "résumé") == find(root, "NAIVE") == [sent.id]
    assert find(root, "resu*") == find(root, "na*") == [sent.id]


_SENDER = ("import sys\nfrom mailslot import FileStore, Mailbox\n"
           "from mailslot.access.identity import Identity\n"
           "box = Mailbox(FileStore(sys.argv[1]), Identity(sys.argv[2], '--agent'))\n"
           "for n in range(int(sys.argv[3])):\n"
           "    box.send('gemini', f'load {sys.argv[2]} {n}', sys.argv[4], new=True)\n")


def _senders(root: Path, processes: int, each: int, words: str) -> list[subprocess.Popen[bytes]]:
    """``processes`` processes, each sending ``each`` messages of ``words`` to gemini."""
    return [subprocess.Popen([sys.executable, "-c", _SENDER, str(root), f"w{i}", str(each),
                              words]) for i in range(processes)]


def test_eight_processes_sending_at_once_are_all_found(root: Path) -> None:
    workers = _senders(root, 8, 10, "concurrent words")
    assert [w.wait(timeout=120) for w in workers] == [0] * 8
    assert len(FileStore(root).search(Search(match=parse("concurrent"), limit=500))) == 80


def test_searches_while_processes_send_lose_no_message(root: Path) -> None:
    workers = _senders(root, 4, 25, "racing words")
    while any(w.poll() is None for w in workers):  # each search takes the lines so far
        FileStore(root).search(Search(match=parse("racing"), limit=500))
    assert [w.wait(timeout=120) for w in workers] == [0] * 4
    assert len(FileStore(root).search(Search(match=parse("racing"), limit=500))) == 100
    assert not (root / "index" / "stale").exists()


def _deliver(root: Path, count: int, words: str) -> None:
    store = FileStore(root)
    for n in range(count):
        store.deliver(make_message(subject=f"m{n}", body=words, n=n), ["gemini"])


def _indexed(root: Path) -> tuple[int, int]:
    """How many rows the index holds, and how many distinct ids among them."""
    db = sqlite3.connect(root / "index" / "search.sqlite")
    try:
        row = db.execute("SELECT count(*), count(DISTINCT id) FROM messages").fetchone()
        return int(row[0]), int(row[1])
    finally:
        db.close()


def test_a_search_answers_after_a_moment_and_says_how_many_newest_it_missed(
        root: Path, box: Box, cli: Callable[..., object],
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert find(root, "nothing") == []  # the index exists
    _deliver(root, 250, "bounded words")
    monkeypatch.setattr("mailslot.backends.files.search_index.CATCH_UP_SECONDS", 0.0)
    first = cli("--agent", "gemini", "search", "bounded")
    assert first.code == 0  # type: ignore[attr-defined]
    assert first.out.endswith(  # type: ignore[attr-defined]
        "still indexing: 150 newest messages not yet searched (search again in a "
        "moment)\n")  # one batch of 100 was taken in, whatever the time allowed
    as_json = cli("--agent", "gemini", "search", "bounded", "--json")
    assert as_json.out.startswith("[")  # type: ignore[attr-defined]
    assert "still indexing: 50 newest" in as_json.err  # type: ignore[attr-defined]
    assert FileStore(root).catch_up_index(None) == 0
    monkeypatch.undo()
    later = cli("--agent", "gemini", "search", "bounded", "--limit", "500")
    assert "still indexing" not in later.out  # type: ignore[attr-defined]
    assert _indexed(root) == (250, 250)


_CATCHER = ("import sys\nfrom mailslot import FileStore\n"
            "print(FileStore(sys.argv[1]).catch_up_index(None))\n")


def test_two_processes_catching_up_at_once_index_each_message_once(root: Path) -> None:
    assert find(root, "nothing") == []
    _deliver(root, 300, "shared words")
    workers = [subprocess.Popen([sys.executable, "-c", _CATCHER, str(root)],
                                stdout=subprocess.DEVNULL) for _ in range(2)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    assert _indexed(root) == (300, 300)
    assert FileStore(root).unsearched() == 0


_STOPPING_CATCHER = (
    "import sys, threading\n"
    "from mailslot import FileStore\n"
    "from mailslot.backends.files import search_index\n"
    "add, batches = search_index._add, []\n"
    "def stopping(db, messages):\n"
    "    add(db, messages)\n"
    "    batches.append(1)\n"
    "    if len(batches) == int(sys.argv[2]):\n"
    "        print('inside', flush=True)\n"
    "        threading.Event().wait()\n"
    "search_index._add = stopping\n"
    "FileStore(sys.argv[1]).catch_up_index(None)\n")
"""A catcher that stops inside its Nth batch (its messages added, the batch not yet
committed) and says so, to be killed there: test code, nothing of it in mailslot."""


def _killed_inside_batch(root: Path, batch: int) -> None:
    with subprocess.Popen([sys.executable, "-c", _STOPPING_CATCHER, str(root), str(batch)],
                          stdout=subprocess.PIPE, text=True) as worker:
        try:
            assert worker.stdout is not None
            assert worker.stdout.readline() == "inside\n"  # it is in the middle of the work
        finally:
            worker.kill()
            worker.wait(timeout=120)
    assert worker.returncode == -signal.SIGKILL  # killed, not finished


def test_a_process_killed_while_catching_up_loses_and_doubles_nothing(root: Path) -> None:
    assert find(root, "nothing") == []
    _deliver(root, 400, "killed words")
    # (batch it is killed in, rows indexed after): the batches before it stay, its own is
    # rolled back whole, and the next catcher goes on from there.
    for batch, indexed in ((2, 100), (1, 100), (3, 300)):
        _killed_inside_batch(root, batch)
        assert _indexed(root) == (indexed, indexed)
        assert FileStore(root).unsearched() == 400 - indexed
    assert FileStore(root).catch_up_index(None) == 0
    assert _indexed(root) == (400, 400)
    assert len(FileStore(root).search(Search(match=parse("killed"), limit=1000))) == 400
