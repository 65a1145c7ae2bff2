"""Listing cost against history: ``inbox``, ``who``, the session-start hook and
``doctor`` as whole processes on mailboxes of 200, 10,000, 100,000 and 1,000,000
messages (90% done), each as a ratio of ``python -c pass`` measured in the same rounds.

Targets (docs/performance.md, "Scale"): at 100,000 messages ``inbox``, ``who`` and the
hook <= 3 x ``python -c pass`` and ``doctor`` (bounded, the default) <= 5 x; at
1,000,000 each within 1.5 x of its own 100,000 figure.

The mailboxes are built once, by writing message files straight into the store's
format (no send per message), then letting the store count its tallies and sent
indexes (``repair_counts``, what ``doctor --fix`` does): real, valid mailboxes that
``doctor --deep`` accepts. They are kept in ``$XDG_CACHE_HOME/mailslot-bench/scale-v2``
(``~/.cache`` by default), outside the clone, and reused by later runs.
``MAILSLOT_BENCH_SCALE`` chooses the sizes (comma-separated, e.g. ``200,10000``).
Every timed run is checked to have done its work (exit 0 and what doing it prints: a
full first page, every agent, the mail shown, a healthy mailbox), so a command that
fails at once stops the benchmark instead of passing its target.
The package is byte-compiled first, as ``pip install`` does (bench_hooks.py says why).

Shape: ten agents writing to each other in turn; of each agent's mail the oldest 90%
is done, then 5% read, the newest 5% unread. The measured agent is ``agent-0``. All of
it is dated from January 2026 on, so the unread mail is long overdue (older than
``unsurfaced_after_minutes``) and no model was ever shown it: ``who`` looks for its
``surfaced`` lines. The events log holds what a mailbox that lived through it holds (a
``delivered`` line for each message sent, ``read`` and ``done`` lines as it moved on:
three lines for most messages, about 36 MiB at 100,000), except for the unread mail,
which came in by ``import`` (no delivery receipt): a reader looking for its delivery
would read the whole log.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from common import ROOT, VENV_BIN, Expect, Row, listed, timed_run
from mailslot.core.message import Message
from mailslot.store.format import EVENTS, SEGMENT_BYTES

SIZES = ("200", "10000", "100000", "1000000", "1000000h")
"""``h``: history only: the open mail of the 100,000 mailbox (10,000 messages), the
rest done; plain sizes keep 10% of their mail open."""
OPEN_AS_AT_100K = 10_000
AGENTS = 10
VERSION = "scale-v2"
ROUNDS = 9
TARGETS = {"inbox": 3.0, "who": 3.0, "hook session-start": 3.0, "doctor": 5.0}
GROWTH = 1.5  # 1,000,000 against 100,000


def _cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mailslot-bench" / VERSION


def _sizes() -> list[str]:
    raw = os.environ.get("MAILSLOT_BENCH_SCALE")
    return raw.split(",") if raw else list(SIZES)


def _count(size: str) -> int:
    return int(size.rstrip("h"))


def _label(size: str) -> str:
    count = _count(size)
    text = f"{count // 1_000_000}M" if count >= 1_000_000 else \
        f"{count // 1000}k" if count >= 1000 else size
    return text + ("h" if size.endswith("h") else "")


def build(root: Path, count: int, open_mail: int | None = None) -> None:
    """``count`` messages among :data:`AGENTS` agents, written in the store's format;
    of each agent's, the newest 10% open (or ``open_mail`` in all), half of that unread."""
    from mailslot import FileStore
    from mailslot.core.ids import new_id
    from mailslot.core.message import to_bytes

    names = [f"agent-{n}" for n in range(AGENTS)]
    store = FileStore(root)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    per_agent = [0] * AGENTS
    plan: list[tuple[int, int, int]] = []  # (n, sender, recipient)
    for n in range(count):
        recipient = n % AGENTS
        sender = (recipient + 1 + n // AGENTS % (AGENTS - 1)) % AGENTS
        plan.append((n, sender, recipient))
        per_agent[recipient] += 1
    seen = [0] * AGENTS
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    log = _Log(store._folder("log", create=True))
    for name in names:
        for state in ("unread", "read", "done"):
            store._box(name, state, create=True)  # the folders, made (0700) as mailslot does
    folders = {(a, s): store._box(names[a], s) for a in range(AGENTS)
               for s in ("unread", "read", "done")}
    for n, sender, recipient in plan:
        when = start + timedelta(seconds=n)
        message = Message(new_id(when, names[sender], [names[recipient]]), when.isoformat(),
                          names[sender], (names[recipient],), f"report {n}",
                          "A few lines of a report.\n" * 4)
        left = per_agent[recipient] - seen[recipient]  # this one and the newer
        seen[recipient] += 1
        opened = per_agent[recipient] // 10 if open_mail is None else open_mail // AGENTS
        state = "done" if left > opened else "read" if left > opened // 2 else "unread"
        fd = os.open(os.path.join(folders[recipient, state], f"{message.id}.md"), flags,
                     0o600)
        os.write(fd, to_bytes(message))
        os.close(fd)
        if state != "unread":  # unread mail came in by import: no receipt
            log.add(message, state)
    log.close()
    store.repair_counts()


class _Log:
    """The events log a mailbox that lived through the mail holds, written in the
    store's format: segments of :data:`~mailslot.store.format.SEGMENT_BYTES`, rolled as
    ``append_event`` rolls them, the newest ``events.jsonl``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.lines: list[bytes] = []
        self.size = 0
        self.rolled = 0

    def add(self, message: Message, state: str) -> None:
        from mailslot.core import jsontext

        at = datetime.fromisoformat(message.date)
        said = [("delivered", message.date, {"agent": message.sender, "to": list(message.to)})]
        if state in ("read", "done"):
            said.append(("read", (at + timedelta(minutes=5)).isoformat(), {}))
        if state == "done":
            said.append(("done", (at + timedelta(minutes=9)).isoformat(), {}))
        for kind, ts, extra in said:
            record = {"ts": ts, "event": kind, "id": message.id,
                      **(extra or {"agent": message.to[0]})}
            line = (jsontext.dumps(record, ascii=False, compact=True) + "\n").encode()
            self.lines.append(line)
            self.size += len(line)
            if self.size > SEGMENT_BYTES:
                self.rolled += 1
                self._write(f"events.{self.rolled:06d}.jsonl")

    def _write(self, name: str) -> None:
        fd = os.open(os.path.join(self.folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                     0o600)
        with os.fdopen(fd, "wb") as out:
            out.writelines(self.lines)
        self.lines, self.size = [], 0

    def close(self) -> None:
        self._write(EVENTS)


def _mailbox(size: str) -> Path:
    count = _count(size)
    root = _cache() / size
    ready = root / ".built"
    if not ready.exists():
        if root.exists():
            subprocess.run(["rm", "-rf", str(root)], check=True)
        began = time.perf_counter()
        (root / "mailbox").parent.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o700)
        build(root / "mailbox", count, OPEN_AS_AT_100K if size.endswith("h") else None)
        print(f"  built {count:,} messages in {time.perf_counter() - began:.0f} s "
              f"({root})", file=sys.stderr, flush=True)
        ready.write_text("")
    return root / "mailbox"


def _commands(mailbox: Path, size: str) -> dict[str, tuple[list[str], bytes | None, Expect]]:
    """Each command, its input (``b""``: a new session's) and what doing its work shows:
    ``inbox`` a full first page of agent-0's open mail, ``who`` every agent and the
    overdue mail of one no session was started for, the hook agent-0's mail, ``doctor``
    a healthy mailbox."""
    cli = [str(VENV_BIN / "mailslot"), "--dir", str(mailbox)]
    count = _count(size)
    opened = (OPEN_AS_AT_100K if size.endswith("h") else count // 10) // AGENTS
    page = min(20, opened)
    return {
        "inbox": ([*cli, "--agent", "agent-0", "inbox"], None,
                  lambda out: listed(out) == page),
        "who": ([*cli, "--agent", "agent-0", "who"], None,
                [f"agent-{AGENTS - 1} ", "unsurfaced: agent-1 has"]),
        "hook session-start": ([str(VENV_BIN / "mailslot"), "hook", "claude",
                                "session-start"], b"", ["waiting for agent-0"]),
        "doctor": ([*cli, "doctor"], None, ["ok: no problems found"]),
    }


def _session_start(n: int, cwd: Path) -> bytes:
    """A new session each time, so each run shows the mail (as a new session does)."""
    return json.dumps({"session_id": f"bench-scale-{os.getpid()}-{n}", "cwd": str(cwd),
                       "hook_event_name": "SessionStart", "source": "startup"}).encode()


def measure(mailbox: Path, size: str) -> dict[str, float]:
    """Each command's median over :data:`ROUNDS`, as a ratio of ``python -c pass``
    timed in the same rounds; each run checked to have done its work."""
    env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_AGENT"}
    env["MAILSLOT_DIR"] = str(mailbox)
    env["MAILSLOT_AGENT"] = "agent-0"
    cwd = mailbox.parent
    bare = [sys.executable, "-c", "pass"]
    times: dict[str, list[float]] = {"python -c pass": []}
    commands = _commands(mailbox, size)
    for n in range(ROUNDS):
        times["python -c pass"].append(timed_run(bare, env=env, cwd=cwd))
        for name, (argv, stdin, shows) in commands.items():
            given = _session_start(n, cwd) if stdin is not None else None
            times.setdefault(name, []).append(timed_run(
                argv, shows, quiet=stdin is not None, input=given, env=env, cwd=cwd))
    base = statistics.median(times.pop("python -c pass"))
    return {name: statistics.median(t) / base for name, t in times.items()}


def run() -> list[Row]:
    compileall.compile_dir(str(ROOT / "src" / "mailslot"), quiet=1)
    sizes = _sizes()
    found: dict[str, dict[str, float]] = {}
    for size in sizes:
        found[size] = measure(_mailbox(size), size)
    rows: list[Row] = []
    load = os.getloadavg()[0]
    for name, limit in TARGETS.items():
        cells = " / ".join(f"{found[c][name]:.1f}x" for c in sizes)
        at = [c for c in sizes if _count(c) >= 100_000]
        if "100000" in found:
            ok: bool | None = found["100000"][name] <= limit
            target = f"<= {limit:g}x at 100k"
            for big in ("1000000", "1000000h"):
                if big in found:
                    grown = found[big][name] / found["100000"][name]
                    ok = ok and grown <= GROWTH
                    target += f"; {_label(big)} {grown:.2f}x of 100k (<= {GROWTH})"
        else:
            ok, target = None, "- (no 100k size run)"
        label = "/".join(_label(c) for c in sizes)
        rows.append(Row(f"scale: {name}, {label} messages (90% done; h: 10k open), "
                        "x python -c pass",
                        cells, f"python -c pass, same rounds; load {load:.1f}",
                        target, ok if at else None))
    return rows


if __name__ == "__main__":
    from common import print_table

    print_table(run())
