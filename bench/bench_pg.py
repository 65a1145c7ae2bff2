"""The PostgreSQL store next to the file store: send (one recipient and ten), the
inbox's first page at 100,000 messages, send -> wake across two "machines", and the
session hook's whole-process time.

Runs a throwaway cluster (``tests/pgcluster.py``) with fsync on, on this machine's
disk, so a send pays for a real commit; the file store's rows are measured in the same
run on a folder of the same disk. The "machines" are two processes with their own HOME
sharing the database: this one sends, a ``mailslot watch`` wakes by LISTEN/NOTIFY.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from bench_hooks import FIXTURES
from bench_store import BODY, _fill, _scratch
from bench_wake import TARGET_P99, measure
from common import ROOT, VENV_BIN, Row, expect_stored, ms, percentile, timed_run, unlimited
from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.core.message import Message, to_bytes

sys.path.insert(0, str(ROOT / "tests"))
from pgcluster import Cluster, cluster

FIXTURE = FIXTURES / "claude-session-start.json"

SENDS = 200
INBOX = 100_000


def _sends(location: str, recipients: int) -> float:
    """Sends per second to ``recipients`` agents (one transaction / one fsync each)."""
    unlimited(location)
    box = Mailbox(open_store(location), Identity("claude", "--agent"))
    to = [f"agent{n}" for n in range(recipients)]
    box.send(to, "warm-up", BODY)
    start = time.perf_counter()
    for n in range(SENDS):
        box.send(to, f"Schema change, part {n}", BODY)
    took = time.perf_counter() - start
    for agent in to:
        expect_stored(location, agent, SENDS + 1)
    return SENDS / took


def _send_rows(pg: Cluster, folder: Path) -> list[Row]:
    rows = []
    for recipients in (1, 10):
        database = _sends(pg.new_database(), recipients)
        files = _sends(str(folder / f"send{recipients}"), recipients)
        rows.append(Row(f"PostgreSQL send to {recipients} ({SENDS}, commit per send)",
                        f"{database:,.0f}/s", f"file store {files:,.0f}/s",
                        "(informational)", None))
    return rows


def _fill_database(location: str, count: int) -> None:
    """``count`` unread messages for gemini, in bulk (setup only)."""
    import psycopg

    with psycopg.connect(location) as conn, conn.cursor() as cur, cur.copy(
            "COPY mail (agent, id, state, data, sender) FROM STDIN") as copy:
        for i in range(count):
            message = Message(
                id=f"2026-01-01_{i // 1_000_000:06d}.{i % 1_000_000:06d}_claude_to_gemini_"
                f"note-{i}_{i % 0xFFFFFF:06x}",
                date="2026-01-01T12:00:00+00:00", sender="claude", to=("gemini",),
                subject=f"Note number {i} about the importer", body=BODY)
            copy.write_row(("gemini", message.id, "unread", to_bytes(message), "claude"))


def _first_page(location: str) -> float:
    box = Mailbox(open_store(location), Identity("gemini", "--agent"))
    samples = []
    for _ in range(15):
        start = time.perf_counter()
        assert len(box.inbox(limit=20)) == 20
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _inbox_row(pg: Cluster, folder: Path) -> Row:
    location = pg.new_database()
    open_store(location).init()
    _fill_database(location, INBOX)
    _fill(folder / "inbox", INBOX)
    database, files = _first_page(location), _first_page(str(folder / "inbox"))
    return Row(f"PostgreSQL inbox first page, {INBOX:,} unread (median of 15)",
               ms(database), f"file store {ms(files)}", "(informational)", None)


def _wake_row(pg: Cluster) -> Row:
    database = measure(int(os.environ.get("BENCH_WAKE_COUNT", "240")),
                       location=pg.new_database())
    p99 = percentile(database, 99)
    return Row(f"PostgreSQL send -> wake command start, two machines, {len(database)} msgs",
               f"p50 {ms(percentile(database, 50))}, p99 {ms(p99)}",
               "file store: the bench_wake row", f"p99 <= {TARGET_P99 * 1000:.0f} ms",
               p99 <= TARGET_P99)


def _hook_row(pg: Cluster, folder: Path) -> Row:
    """The session hook as a whole process on the database (driver import, connect,
    read), against ``python -c pass``, interleaved."""
    location = pg.new_database()
    Mailbox(open_store(location), Identity("claude", "--agent")).send("gemini", "s", BODY)
    env = {**os.environ, "MAILSLOT_STORE": location, "HOME": str(folder)}
    stdin = FIXTURE.read_bytes()
    hook = [str(VENV_BIN / "mailslot"), "hook", "claude", "session-start", "--agent", "gemini"]
    times: dict[str, list[float]] = {"hook": [], "bare": []}
    # gemini's mail, shown (then, to the same session, reminded of); a failed hook prints
    # nothing and says so on stderr
    shown = {"hook": ["additionalContext", "--agent gemini"], "bare": []}
    for _ in range(15):
        for name, argv in (("hook", hook), ("bare", [sys.executable, "-c", "pass"])):
            times[name].append(timed_run(argv, shown[name], quiet=True, input=stdin,
                                         env=env))
    hook_t, bare_t = statistics.median(times["hook"]), statistics.median(times["bare"])
    return Row("PostgreSQL session-start hook process (median of 15)",
               f"{ms(hook_t)} ({hook_t / bare_t:.1f}x)", f"python -c pass {ms(bare_t)}",
               "<= 3.0x", hook_t <= 3 * bare_t)


def run() -> list[Row]:
    with cluster(durable=True) as pg, _scratch() as folder:
        return [*_send_rows(pg, folder), _inbox_row(pg, folder), _wake_row(pg),
                _hook_row(pg, folder)]


if __name__ == "__main__":
    from common import print_table

    print_table(run())
