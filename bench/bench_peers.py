"""Peers over ssh: a message's way from ``send`` to the other node's inbox on a live link,
and batches both ways, next to ``serve --http`` in the same run.

Two nodes on one machine, as the tests set them up (tests/sshlab.py): a loopback sshd of
the benchmark's own, two HOMEs and two mailbox folders; node ``a`` is this process, node
``b`` is reached over ssh. Latency: a's carrier holds one link to ``b`` live (what the
watcher does while mail moves), and each message is sent alone, timed from before
``send`` to its file appearing in b's inbox. Throughput: 1,000 messages queued each way
(a to b, and b to a, which a fetches on the same link), carried by one ``carry``. The
HTTP figures are one client's ``send_message`` round trips (stored when answered) and
1,000 sends one after another. Every timed message is checked to have arrived, once.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import ROOT, NotDone, Row, expect_stored, ms, per_second, percentile, unlimited

sys.path.insert(0, str(ROOT / "tests"))

from mailslot import Mailbox
from sshlab import Node, Sshd, cut

SINGLES = 200
BATCH = 1000
LATENCY_P50, LATENCY_P99, RATE = 0.100, 0.500, 300.0


def _nodes(tmp: Path) -> tuple[Sshd, Node, Node, Path]:
    sshd = Sshd(tmp / "sshd").setup().start()
    a = Node("a", tmp / "home-a", str(tmp / "box-a"))
    b = Node("b", tmp / "home-b", str(tmp / "box-b"))
    config = sshd.client_config(tmp / "ssh_config", {"host-b": ""})
    for node in (a, b):
        node.home.mkdir()
        node.run("init")
        node.run("config", "set", "node", node.name)
        unlimited(node.store)
        node.write_remote(tmp)
    b.run("--agent", "gemini", "send", "--to", "codex", "--subject", "hi", "--body", "x",
          "--new")
    a.run("peer", "add", "b", "host-b", "--remote-store", b.store, "--remote-mailslot",
          str(b.remote), "--ssh-command", f"ssh -F {config}")
    return sshd, a, b, config


def _arrived(b: Node, message_id: str) -> str:
    """Where a's message ``message_id`` lands in b's inbox (as b names it)."""
    mine = message_id.replace("_claude_to_codex@b_", "_claude@a_to_codex_")
    return os.path.join(b.store, "agents", "codex", "new", f"{mine}.md")


def _latency(a: Node, b: Node) -> list[float]:
    """One message at a time on a live link: send, then wait for its file at b."""
    box = Mailbox.open(a.store, "claude")
    stop = threading.Event()
    carrier = threading.Thread(target=lambda: Mailbox.open(a.store).carry(
        "b", linger=3600, stop=stop), daemon=True)
    carrier.start()
    box.send("codex@b", "warm", "the link is open and live")
    time.sleep(2.0)
    samples = []
    try:
        for i in range(SINGLES):
            start = time.perf_counter()
            sent = box.send("codex@b", f"one {i}", "x" * 500)
            target = _arrived(b, sent.id)
            deadline = start + 30
            while not os.path.exists(target):
                if time.perf_counter() > deadline:
                    raise NotDone(f"{sent.id} did not reach b within 30 s")
                time.sleep(0.0005)
            samples.append(time.perf_counter() - start)
            time.sleep(0.02)  # one at a time, not a burst
    finally:
        stop.set()
        carrier.join(timeout=60)
    expect_stored(b.store, "codex", SINGLES + 2)
    return samples


def _batched(a: Node, b: Node) -> tuple[float, int]:
    """1,000 queued each way, then one carry: seconds, envelopes moved."""
    mine = Mailbox.open(a.store, "claude")
    for i in range(BATCH):
        mine.send("codex@b", f"batch {i}", "y" * 500)
    theirs = Mailbox.open(b.store, "codex")  # kept at b; b's peer serve signs it
    for i in range(BATCH):
        theirs.send("claude@a", f"back {i}", "z" * 500)
    start = time.perf_counter()
    moved = Mailbox.open(a.store).carry("b")
    took = time.perf_counter() - start
    expect_stored(b.store, "codex", SINGLES + 2 + BATCH)
    expect_stored(a.store, "claude", BATCH)
    return took, moved


def _http(tmp: Path) -> tuple[list[float], float]:
    """``serve --http``: one client's send_message round trips, then 1,000 sends."""
    from bench_http import Session, _serve
    from mailslot import FileStore
    from mailslot.access import authority
    from mailslot.access.credentials import read_credential

    root = tmp / "http-box"
    unlimited(root)
    store = FileStore(root)
    secret = read_credential(authority.register(
        store, "claude", path=str(tmp / "claude.json")).path).secret
    proc, url = _serve(root)
    try:
        session = Session(url, secret)
        singles = []
        for i in range(SINGLES):
            start = time.perf_counter()
            session.call("send_message", {"to": "codex", "subject": f"one {i}",
                                          "body": "x" * 500, "new": True})
            singles.append(time.perf_counter() - start)
        start = time.perf_counter()
        for i in range(BATCH):
            session.call("send_message", {"to": "codex", "subject": f"batch {i}",
                                          "body": "y" * 500, "new": True})
        took = time.perf_counter() - start
        session.close()
    finally:
        proc.terminate()
        proc.wait(60)
    expect_stored(root, "codex", SINGLES + BATCH)
    return singles, took


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        old = {k: os.environ.get(k) for k in ("HOME", "MAILSLOT_ON_DEMAND_WATCHER")}
        os.environ["MAILSLOT_ON_DEMAND_WATCHER"] = "0"  # the carrying here is timed
        sshd, a, b, config = _nodes(tmp)
        os.environ["HOME"] = str(a.home)  # this process is node a
        try:
            singles = _latency(a, b)
            took, moved = _batched(a, b)
        finally:
            for key, value in old.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            cut(config)
            sshd.stop()
        http_singles, http_took = _http(tmp)
    if moved != 2 * BATCH:
        raise NotDone(f"one carry moved {moved} envelopes, not {2 * BATCH}")
    p50, p99 = percentile(singles, 50), percentile(singles, 99)
    rate = moved / took
    return [
        Row("peer: send -> stored in the remote inbox, live link, p50 / p99",
            f"{ms(p50)} / {ms(p99)}",
            f"serve --http send_message {ms(percentile(http_singles, 50))} / "
            f"{ms(percentile(http_singles, 99))}",
            f"p50 <= {ms(LATENCY_P50)}, p99 <= {ms(LATENCY_P99)}",
            p50 <= LATENCY_P50 and p99 <= LATENCY_P99),
        Row(f"peer: {BATCH:,} each way, one carry", per_second(moved, took),
            f"serve --http {BATCH:,} sends: {per_second(BATCH, http_took)}",
            f">= {RATE:.0f}/s", rate >= RATE),
    ]


if __name__ == "__main__":
    from common import print_table

    print_table(run())
