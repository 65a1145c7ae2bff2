"""Processes killed with SIGKILL at random moments: nothing half-written, nothing lost.

Sender processes send (directed mail to one or two agents, and broadcasts) until they
are killed at a seeded random moment; a reader is killed the same way while it moves
mail between folders. A sender writes an id to its promise file only after ``send``
returned. Whenever the kills land, afterwards every message file parses completely
with exactly the body its sender wrote, every promised message is where it belongs,
and ``doctor`` finds nothing wrong (a killed writer's staging file is only swept after
36 hours).
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from mailslot import FileStore, Mailbox
from mailslot.core.ids import is_id
from mailslot.core.message import from_bytes
from support import copies, files_in, promised, unlimited, wait_for, worker
from workers import body_for, subject_for

SEED = 20260921
SENDERS = 6
RECIPIENTS = ["ann", "bob"]


def kill_at_random(proc: subprocess.Popen[bytes], rng: random.Random,
                   ready: Callable[[], bool]) -> None:
    wait_for(ready, what="the worker to get going")
    time.sleep(rng.uniform(0, 0.03))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode in (-signal.SIGKILL, 0)


def check_file(path: Path) -> None:
    message = from_bytes(path.read_bytes(), name=str(path))
    assert f"{message.id}.md" == path.name
    agent, seq, lines = message.subject.split(" ")
    assert message.sender == agent
    assert message.body == body_for(agent, int(seq), int(lines)), f"{path} is incomplete"
    assert subject_for(agent, int(seq), int(lines)) == message.subject


def test_killed_writers_leave_only_whole_files_and_keep_every_promise(
    root: Path, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    # A sender the machine lets run long before its kill sends hundreds to ann: the
    # loop governor's refusal would end it with an error, not the kill under test.
    unlimited(FileStore(root))
    outs = [tmp_path / f"sent-{i}" for i in range(SENDERS)]
    senders = [worker("send", root, f"s{i}", -1, SEED + i, outs[i], *RECIPIENTS, "all")
               for i in range(SENDERS)]
    reader = worker("read", root, "ann", SEED, tmp_path / "never")
    for i, proc in enumerate(senders):
        enough = rng.randint(1, 25)
        kill_at_random(proc, rng, lambda out=outs[i], n=enough: len(promised(out)) >= n)
        if i == SENDERS // 2:  # once the reader has moved some mail
            moved = [root / "agents" / "ann" / f for f in ("cur", "done")]
            kill_at_random(reader, rng, lambda m=moved: any(files_in(f) for f in m))

    promises = [p for out in outs for p in promised(out)]
    assert len(promises) >= SENDERS
    for mid, to in promises:
        if to == ["all"]:
            assert (root / "broadcast" / "live" / f"{mid}.md").is_file()
            continue
        for agent in to:
            assert copies(root, agent)[mid] == 1, f"promised {mid} missing for {agent}"

    checked = 0
    for folder in [root / "broadcast" / "live",
                   *(root / "agents" / a / f for a in RECIPIENTS for f in ("new", "cur", "done"))]:
        for name in files_in(folder):
            check_file(folder / name)
            checked += 1
    assert checked >= len(promises)
    for name in files_in(root / "tmp"):  # a killed writer's staging file, never in view
        staged = name.rsplit(".", 2)[0]  # a message, or a tally or sent index (caches)
        assert is_id(staged) or staged.split("-", 1)[0] in ("tally", "sent"), name

    # A reader killed between a move into done/ and its count leaves a stale count: a
    # cache, said by doctor and counted again by --fix; nothing else may be wrong.
    report = Mailbox(FileStore(root)).doctor()
    stale = [p for p in report.problems if "/tally/" in p and "does not match" in p]
    assert report.problems == stale, report.problems
    if stale:
        Mailbox(FileStore(root)).doctor(fix=True)
        report = Mailbox(FileStore(root)).doctor()
    assert report.healthy, report.problems
