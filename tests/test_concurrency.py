"""Many real processes at once, no locks: every message lands exactly once, none is lost.

Eight sender processes send 200 messages each to three shared recipients (some to two
at once) while four reader processes, two of them the same agent, read, mark read and
mark done concurrently. Afterwards every promised message is in exactly one of new/,
cur/ or done/ of each of its recipients, every file parses, every receipt line is whole,
and nothing is left in tmp/.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.core.message import from_bytes
from support import copies, files_in, finish, promised, unlimited, wait_for, worker

SENDERS = 8
PER_SENDER = 200
RECIPIENTS = ["ann", "bob", "cat"]
READERS = ["ann", "ann", "bob", "cat"]


def send_and_read_at_once(location: str | Path, tmp_path: Path) -> tuple[dict[str, set[str]], int]:
    """Run the senders and readers on the store at ``location`` to the end; return the
    ids promised to each recipient and how many messages were sent (any backend)."""
    stop = tmp_path / "stop"
    outs = [tmp_path / f"sent-{i}" for i in range(SENDERS)]
    unlimited(open_store(str(location)))
    readers = [worker("read", location, agent, 100 + i, stop)
               for i, agent in enumerate(READERS)]
    senders = [worker("send", location, f"sender-{i}", PER_SENDER, i, outs[i], *RECIPIENTS)
               for i in range(SENDERS)]
    for proc in senders:
        finish(proc, timeout=240)
    stop.touch()
    for proc in readers:
        finish(proc)

    expected: dict[str, set[str]] = {r: set() for r in RECIPIENTS}
    total = 0
    for out in outs:
        for mid, to in promised(out):
            total += 1
            for name in to:
                expected[name].add(mid)
    assert total == SENDERS * PER_SENDER
    return expected, total


def test_concurrent_senders_and_readers_lose_nothing_and_duplicate_nothing(
    root: Path, tmp_path: Path
) -> None:
    expected, total = send_and_read_at_once(root, tmp_path)
    for agent in RECIPIENTS:
        found = copies(root, agent)
        assert set(found) == expected[agent]
        assert {n for n, c in found.items() if c != 1} == set()
        for folder in ("new", "cur", "done"):
            for name in files_in(root / "agents" / agent / folder):
                path = root / "agents" / agent / folder / name
                message = from_bytes(path.read_bytes(), name=str(path))
                assert f"{message.id}.md" == name and agent in message.to
    assert files_in(root / "tmp") == []
    assert all(files_in(root / "agents" / a / "done") for a in RECIPIENTS)  # readers worked
    assert sum(len(copies(root, a)) for a in RECIPIENTS) > total  # some went to two

    lines = (root / "log" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]  # no line is torn or interleaved
    delivered = [e["id"] for e in events if e["event"] == "delivered"]
    assert len(delivered) == len(set(delivered)) == total


def test_wait_for_gives_up_with_a_clear_message() -> None:
    try:
        wait_for(lambda: False, timeout=0.01, what="never")
    except AssertionError as exc:
        assert "timed out waiting for never" in str(exc)
    else:
        raise AssertionError("wait_for did not time out")


def test_two_config_edits_at_once_both_land(root: Path, tmp_path: Path) -> None:
    """``install --wake`` in two terminals: each read-modify-write of config.json waits
    for the other, so neither change is lost."""
    held, release = tmp_path / "held", tmp_path / "release"
    slow = worker("config", root, "gemini", held, release)
    wait_for(held.exists, what="the first edit to be under way")
    box = Mailbox(FileStore(root), Identity("codex", "--agent"))
    thread = threading.Thread(target=box.choose_wake, args=("codex", "command"))
    thread.start()
    # Without the lock the second edit would finish here, and the first then save over
    # it; with it, it waits. (A slow machine only makes this pass for the wrong reason.)
    thread.join(timeout=0.5)
    release.touch()
    thread.join(timeout=60)
    finish(slow)
    agents = FileStore(root).load_config()["agents"]
    assert set(agents) == {"gemini", "codex"}
