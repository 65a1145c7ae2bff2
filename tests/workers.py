"""Worker processes for test_concurrency.py and test_crash.py (run as a script).

    python workers.py send ROOT AGENT COUNT SEED OUT RECIPIENT...   (COUNT -1: until killed)
    python workers.py read ROOT AGENT SEED STOP
    python workers.py config ROOT AGENT HELD RELEASE    (edit config.json slowly)
    python workers.py race LOCATION AGENT ID GO OUT     (claim a wake, finish a message)

A sender appends ``<id> <recipients>`` to OUT only after ``send`` returned, in one
write, so a line in OUT is a promise the mailbox must keep. A reader lists its inbox and
reads, marks read or marks done at random until the file STOP exists, then makes one
last pass. Both are deterministic given their seed (the interleaving is not).
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

from mailslot import Mailbox, open_store
from mailslot.access.identity import Identity


def body_for(agent: str, seq: int, lines: int) -> str:
    """The body a sender writes for message ``seq``: checkable from the subject alone."""
    return "".join(f"{agent} line {i} of message {seq}\n" for i in range(lines))


def subject_for(agent: str, seq: int, lines: int) -> str:
    return f"{agent} {seq} {lines}"


def _box(root: str, agent: str) -> Mailbox:
    """The service as ``agent`` on the store at ``root`` (a folder or a database URL)."""
    return Mailbox(open_store(root), Identity(agent, "--agent"))


def send(root: str, agent: str, count: int, seed: int, out: str, recipients: list[str]) -> None:
    rng = random.Random(seed)
    box = _box(root, agent)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    seq = 0
    while count < 0 or seq < count:
        lines = rng.randint(0, 120)
        subject, body = subject_for(agent, seq, lines), body_for(agent, seq, lines)
        if "all" in recipients and rng.random() < 0.1:
            message = box.broadcast(subject, body)
        else:
            named = [r for r in recipients if r != "all"]
            message = box.send(rng.sample(named, rng.choice((1, 1, 2))), subject, body)
        os.write(fd, f"{message.id} {','.join(message.to)}\n".encode())
        seq += 1
    os.close(fd)


def read(root: str, agent: str, seed: int, stop: str) -> None:
    rng = random.Random(seed)
    box = _box(root, agent)
    last_pass = False
    while True:
        for item in box.inbox(limit=25):
            action = rng.choice(("read", "mark_read", "done", "done"))
            if action == "read":
                box.read(item.message.id)
            elif action == "mark_read":
                box.mark_read(item.message.id)
            else:
                box.done([item.message.id])
        if last_pass:
            return
        last_pass = os.path.exists(stop)
        time.sleep(0.002)  # leave the CPUs to the senders


def edit_config(root: str, agent: str, held: str, release: str) -> None:
    """Add ``agent`` to config.json, holding the edit open until RELEASE exists."""

    def change(config: dict[str, object]) -> bool:
        Path(held).touch()
        while not os.path.exists(release):
            time.sleep(0.005)
        config.setdefault("agents", {})[agent] = {"wake_on_mail": True}  # type: ignore[index]
        return True

    open_store(root).update_config(change)


def race(location: str, agent: str, message_id: str, go: str, out: str) -> None:
    """At GO, claim the wake for ``message_id`` and mark the message done; write to OUT
    whether the claim was won (a store's contract: exactly one process wins)."""
    from mailslot.backends import open_store
    from mailslot.store import WakeEntry
    from mailslot.wake.claims import Queue

    store = open_store(location)
    while not os.path.exists(go):
        time.sleep(0.001)
    won = Queue(store).claim(WakeEntry(message_id, agent)) is not None
    store.move(agent, message_id, "done")  # losing this race is success too
    Path(out).write_text("won" if won else "lost")


if __name__ == "__main__":
    kind, root, agent, *rest = sys.argv[1:]
    if kind == "send":
        send(root, agent, int(rest[0]), int(rest[1]), rest[2], rest[3:])
    elif kind == "config":
        edit_config(root, agent, rest[0], rest[1])
    elif kind == "race":
        race(root, agent, rest[0], rest[1], rest[2])
    else:
        read(root, agent, int(rest[0]), rest[1])
