"""PostgreSQL at team scale: a database of 1,000,000 messages to 1,000 agents (90% done),
20 watchers on 20 "machines" (each its own HOME and ``MAILSLOT_HOST``), 50 sender
processes at once (``pg_team_sender.py``: each its own connection, like an agent on its
own machine, sending one message every 2-6 s). Prints send -> wake on another machine
(p50/p99, from the send and from its commit), the LISTEN connections the database holds,
the inbox's first page at 1,000,000 against 10,000, and the session hook through the
relay against ``python -c pass``; and checks that every message sent was delivered once
and every wake ran once.

The history is bulk-loaded with ``COPY`` into a throwaway cluster (``tests/pgcluster.py``,
fsync on). Smaller runs: ``BENCH_PG_SCALE_MESSAGES`` (default 1,000,000),
``BENCH_PG_SCALE_AGENTS`` (1,000), ``BENCH_PG_SCALE_WATCHERS`` (20),
``BENCH_PG_SCALE_SENDERS`` (50), ``BENCH_PG_SCALE_SENDS`` (sends per sender, 10),
``BENCH_PG_SCALE_GAP_MIN`` / ``_GAP_MAX`` (seconds between one sender's sends, 2 / 6)."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from bench_hooks import FIXTURES
from bench_pg_hook import relay_for
from bench_wake import _RECORDER, TARGET_P99, _wait_for
from common import ROOT, VENV_BIN, NotDone, Row, ms, percentile, timed_run, unlimited
from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.core.message import Message, to_bytes

sys.path.insert(0, str(ROOT / "tests"))
from pgcluster import cluster

MESSAGES = int(os.environ.get("BENCH_PG_SCALE_MESSAGES", "1000000"))
AGENTS = int(os.environ.get("BENCH_PG_SCALE_AGENTS", "1000"))
WATCHERS = int(os.environ.get("BENCH_PG_SCALE_WATCHERS", "20"))
SENDERS = int(os.environ.get("BENCH_PG_SCALE_SENDERS", "50"))
SENDS = int(os.environ.get("BENCH_PG_SCALE_SENDS", "10"))
GAP = (float(os.environ.get("BENCH_PG_SCALE_GAP_MIN", "2")),
       float(os.environ.get("BENCH_PG_SCALE_GAP_MAX", "6")))
"""Seconds between one sender's messages (uniform): a busy agent's pace
(docs/performance.md)."""
SMALL = 10_000
PLACEHOLDER = "2026-01-01_000000.000000_claude_to_agent0_00000000"


OPEN = 100
"""agent0's inbox at either size: this many messages not done (half read), newest of
all, on top of its history (all done): the first page is compared over the same inbox."""


def _load(url: str, count: int) -> None:
    """``count`` messages from claude spread over :data:`AGENTS` agents (each agent's
    90% done, 5% read, 5% unread; agent0's all done), then agent0's :data:`OPEN`, with
    ``COPY`` (one template message, its id swapped per row: the stored bytes name the
    id they are stored under)."""
    import psycopg

    template = to_bytes(Message(PLACEHOLDER, "2026-01-01T12:00:00+00:00", "claude",
                                ("agent0",), "A note about the importer",
                                "The importer skips rows whose id it has seen.\n" * 4))
    head, tail = template.split(PLACEHOLDER.encode(), 1)
    to_line = b"to: agent0"
    with psycopg.connect(url) as conn, conn.cursor() as cur, cur.copy(
            "COPY mail (agent, id, state, data, sender) FROM STDIN") as copy:
        for i in range(count + OPEN):
            agent = f"agent{i % AGENTS}" if i < count else "agent0"
            seconds = i // 1000
            month = 1 if i < count else 2
            message_id = (f"2026-{month:02d}-{1 + seconds // 86400 % 28:02d}_"
                          f"{seconds // 3600 % 24:02d}{seconds // 60 % 60:02d}"
                          f"{seconds % 60:02d}.{i % 1000:06d}_claude_to_{agent}_{i:08x}")
            data = head + message_id.encode() + tail.replace(to_line, f"to: {agent}".encode())
            turn = i // AGENTS % 20
            state = "done" if turn < 18 else ("read" if turn == 18 else "unread")
            if agent == "agent0":
                state = "done" if i < count else ("read" if i % 2 else "unread")
            copy.write_row((agent, message_id, state, data, "claude"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE mail")


def _first_page(url: str) -> float:
    """Median time of agent0's first inbox page (unread and read, 20; its :data:`OPEN`
    are the same at both sizes), in process."""
    box = Mailbox(open_store(url), Identity("agent0", "--agent"))
    box.inbox(limit=20)  # warm: the connection, the schema check
    samples = []
    for _ in range(15):
        start = time.perf_counter()
        page = box.inbox(limit=20)
        samples.append(time.perf_counter() - start)
        if len(page) != 20:
            raise NotDone(f"agent0's first page held {len(page)} messages, not 20")
    return statistics.median(samples)


def _inbox_row(big: str, small: str) -> Row:
    at_big, at_small = _first_page(big), _first_page(small)
    ratio = at_big / at_small
    return Row(f"PostgreSQL inbox first page at {MESSAGES:,} messages, {OPEN} open "
               "(median of 15)",
               f"{ms(at_big)} ({ratio:.2f}x)", f"at {SMALL:,}: {ms(at_small)}",
               "<= 1.5x", ratio <= 1.5)


def _hook_row(url: str, folder: Path) -> Row:
    hook = [str(VENV_BIN / "mailslot"), "hook", "claude", "session-start", "--agent",
            "agent0"]
    base = {**os.environ, "HOME": str(folder)}
    base.pop("MAILSLOT_DIR", None)
    stdin = (FIXTURES / "claude-session-start.json").read_bytes()
    times: dict[str, list[float]] = {"hook": [], "bare": []}
    # agent0's mail, shown (then, to the same session, reminded of); a failed hook prints
    # nothing and says so on stderr
    shown = {"hook": ["additionalContext", "--agent agent0"], "bare": []}
    with relay_for(url, base) as env:
        for _ in range(15):
            for name, argv in (("hook", hook), ("bare", [sys.executable, "-c", "pass"])):
                times[name].append(timed_run(argv, shown[name], quiet=True, input=stdin,
                                             env=env))
    hook_t, bare_t = statistics.median(times["hook"]), statistics.median(times["bare"])
    return Row(f"session-start hook through the relay at {MESSAGES:,} (median of 15)",
               f"{ms(hook_t)} ({hook_t / bare_t:.1f}x pass)", f"python -c pass {ms(bare_t)}",
               "<= 3.0x pass", hook_t <= 3 * bare_t)


def _wake_rows(url: str, tmp: Path) -> list[Row]:
    """:data:`SENDERS` sender processes (``pg_team_sender.py``, each its own connection,
    started and connected before one common start) send :data:`SENDS` messages each, one
    every :data:`GAP` seconds, to agents spread over the machines; each agent's
    ``command`` wake records the time it started. Every watcher hears every
    notification."""
    starts, script = tmp / "starts.txt", tmp / "rec.py"
    script.write_text(_RECORDER)
    command = [sys.executable, "-S", "-E", str(script), "{id}", str(starts)]
    woken = [f"agent{n}" for n in range(min(AGENTS, SENDERS * 2))]
    config = {name: {"wake_on_mail": True, "wake_method": "command", "command": command,
                     "host": f"m{n % WATCHERS}"} for n, name in enumerate(woken)}
    store = open_store(url)
    unlimited(url)
    store.update_config(lambda raw: raw.update(agents=config) or True)
    watchers = []
    for n in range(WATCHERS):
        home = tmp / f"home{n}"
        home.mkdir()
        log = (tmp / f"watch{n}.log").open("w")
        watchers.append((subprocess.Popen(
            [str(VENV_BIN / "mailslot"), "--store", url, "watch"], stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HOME": str(home), "MAILSLOT_HOST": f"m{n}",
                 "MAILSLOT_ON_DEMAND_WATCHER": "0"}), log, tmp / f"watch{n}.log"))
    sent: dict[str, float] = {}
    committed: dict[str, float] = {}
    problems: list[str] = []
    listening: list[int] = []
    try:
        for _, _, path in watchers:
            _wait_for(lambda p=path: "watching" in p.read_text(), 60)
        senders = _start_senders(url, woken)
        for proc in senders:  # each is connected once it says so
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                problems.append(f"sender {proc.args[3]} did not start")
        begun = time.perf_counter()
        cpu_before = _cpu_split(url, [proc for proc, _, _ in watchers], senders)
        for proc in senders:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        listening.append(_listen_connections(url))
        for proc in senders:
            assert proc.stdout is not None
            out = proc.stdout.read()
            proc.wait()
            for line in out.splitlines():
                if line.startswith("error "):
                    problems.append(line[6:])
                else:
                    message_id, before, after = line.split()
                    sent[message_id], committed[message_id] = float(before), float(after)
        sending = time.perf_counter() - begun
        load = os.getloadavg()
        listening.append(_listen_connections(url))

        def lines() -> list[str]:
            return starts.read_text().splitlines() if starts.exists() else []

        with contextlib.suppress(RuntimeError):  # what never started is counted below
            _wait_for(lambda: len(lines()) >= len(sent), 120)
        cpu = _cpu_split(url, [proc for proc, _, _ in watchers], []) - cpu_before
        window = time.perf_counter() - begun
        time.sleep(2)  # a second start of any wake would show by now
    finally:
        for proc, _log, _ in watchers:
            proc.send_signal(signal.SIGTERM)
        for proc, log, _ in watchers:
            proc.wait(30)
            log.close()
    runs = Counter(line.split()[0] for line in lines())
    started = {i: float(t) for i, t in (line.split() for line in lines())}
    latencies = [started[i] - t for i, t in sent.items() if i in started]
    from_commit = [started[i] - t for i, t in committed.items() if i in started]
    sends = [committed[i] - t for i, t in sent.items()]
    delivered = _delivered_once(url, list(sent))
    lost = len(sent) - len(latencies)
    twice = sum(1 for count in runs.values() if count > 1)
    expected = SENDERS * SENDS
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    return [
        Row(f"send -> wake on another machine, {SENDERS} sender processes, {WATCHERS} "
            f"watchers, {len(sent)} msgs", f"p50 {ms(p50)}, p99 {ms(p99)}",
            f"{len(sent) / sending:,.1f} sends/s overall (each sender one every "
            f"{GAP[0]:g}-{GAP[1]:g} s); load average {load[0]:.2f}",
            f"p99 <= {TARGET_P99 * 1000:.0f} ms", p99 <= TARGET_P99),
        Row("  the same from the send's commit (NOTIFY -> watcher -> wake started)",
            f"p50 {ms(percentile(from_commit, 50))}, p99 {ms(percentile(from_commit, 99))}",
            f"a send itself: p50 {ms(percentile(sends, 50))}, p99 {ms(percentile(sends, 99))}",
            "(informational)", None),
        Row(f"  CPU while sending and waking ({window:.1f} s on {os.cpu_count()} cores)",
            cpu.describe(), cpu.rest(),
            "(informational)", None),
        Row("LISTEN connections the database holds (start of sending / end)",
            " / ".join(str(n) for n in listening), f"{WATCHERS} watchers on {WATCHERS} "
            "machines", "(informational)", None),
        Row("nothing lost or doubled at scale (sent / delivered once / woken once)",
            f"{len(sent)}/{expected} sent, {delivered} delivered once, "
            f"{len(latencies) - twice} woken once, {twice} twice, {lost} never",
            "; ".join(problems[:2]) or "no send failed", "all once",
            len(sent) == expected == delivered and lost == twice == 0 and not problems),
    ]


def _start_senders(url: str, woken: list[str]) -> list[subprocess.Popen[str]]:
    """:data:`SENDERS` sender processes, each given its share of ``woken`` in turn."""
    script = str(Path(__file__).with_name("pg_team_sender.py"))
    senders = []
    for k in range(SENDERS):
        mine = [woken[(k * SENDS + n) % len(woken)] for n in range(SENDS)]
        senders.append(subprocess.Popen(
            [sys.executable, script, url, f"sender{k}", str(SENDS), f"{GAP[0]:g}",
             f"{GAP[1]:g}", str(k), *mine], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True))
    return senders


@dataclass(frozen=True)
class _Cpu:
    """CPU seconds, by whom: the senders, the watchers themselves, the wake commands they
    ran (their waited children), PostgreSQL (the postmaster, its live backends and the
    ones that ended)."""

    senders: float
    watchers: float
    commands: float
    postgres: float
    machine: float
    """Every process's, this bench's and other work on the machine's included."""

    def __sub__(self, other: _Cpu) -> _Cpu:
        return _Cpu(*(a - b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def describe(self) -> str:
        return (f"senders {self.senders:.1f} s, watchers {self.watchers:.1f} s, wake "
                f"commands {self.commands:.1f} s, PostgreSQL {self.postgres:.1f} s")

    def rest(self) -> str:
        mine = self.senders + self.watchers + self.commands + self.postgres
        return (f"machine busy {self.machine:.1f} s: the rest ({self.machine - mine:.1f} s) "
                "is this bench and other work")


def _cpu_split(url: str, watchers: list[subprocess.Popen[bytes]],
               running: list[subprocess.Popen[str]]) -> _Cpu:
    """What the parts of the run have used so far (Linux ``/proc``): the senders are
    this process's waited children and the ``running`` ones (their start-up, before
    the common start, is so left out of the difference)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
    postmaster = _stat(int(row[0]) if row else 0)[2]
    backends = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    live = sum(own for own, _, parent in map(_stat, backends) if parent == postmaster)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    mine = [_stat(proc.pid) for proc in watchers]
    senders = usage.ru_utime + usage.ru_stime + sum(_stat(p.pid)[0] for p in running)
    # /proc/stat's first line: user nice system idle iowait irq softirq steal, in ticks
    ticks = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    busy = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
    return _Cpu(senders, sum(own for own, _, _ in mine),
                sum(waited for _, waited, _ in mine), sum(_stat(postmaster)[:2]) + live, busy)


def _stat(pid: int) -> tuple[float, float, int]:
    """A process's own CPU seconds, its waited children's, and its parent (zeros once
    it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0, 0.0, 0
    tick = os.sysconf("SC_CLK_TCK")
    return ((int(fields[11]) + int(fields[12])) / tick,
            (int(fields[13]) + int(fields[14])) / tick, int(fields[1]))


def _listen_connections(url: str) -> int:
    """Backends whose (last) query is a LISTEN: one per open watch."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity "
                           "WHERE query ILIKE 'LISTEN%'").fetchone()
    return int(row[0]) if row else 0


def _delivered_once(url: str, ids: list[str]) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT id, count(*) FROM mail WHERE id = ANY(%s) GROUP BY id",
                            (ids,)).fetchall()
    return sum(1 for _, count in rows if count == 1)


def run() -> list[Row]:
    from mailslot.mail import watchers

    os.environ[watchers.OFF_SWITCH] = "0"  # the bench's own watchers, none on demand
    try:
        return _run()
    finally:
        os.environ.pop(watchers.OFF_SWITCH, None)


def _run() -> list[Row]:
    with cluster(durable=True) as pg, tempfile.TemporaryDirectory() as tmp:
        big, small = pg.new_database(), pg.new_database()
        loading = time.perf_counter()
        _load(big, MESSAGES)
        loaded = time.perf_counter() - loading
        _load(small, SMALL)
        rows: list[Any] = [Row(f"bulk load of {MESSAGES:,} messages to {AGENTS:,} agents "
                               "(COPY, setup)", f"{loaded:.1f} s", "", "(informational)",
                               None)]
        rows.append(_inbox_row(big, small))
        rows.append(_hook_row(big, Path(tmp)))
        rows.extend(_wake_rows(big, Path(tmp)))
        return rows


if __name__ == "__main__":
    from common import print_table

    print_table(run())
