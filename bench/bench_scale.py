"""Listing cost against history: ``inbox``, ``who``, the session-start hook and
``doctor`` as whole processes on mailboxes of 200, 10,000, 100,000 and 1,000,000
messages (90% done), each as a ratio of ``python -c pass`` measured in the same rounds.

Targets (docs/performance.md, "Scale"): at 100,000 messages ``inbox``, ``who`` and the
hook <= 3 x ``python -c pass`` and ``doctor`` (bounded, the default) <= 5 x; at
1,000,000 each within 1.5 x of its own 100,000 figure.

The mailboxes are built once, by writing message files straight into the store's
format (no send per message), then letting the store count its tallies and sent
indexes (``repair_counts``, what ``doctor --fix`` does): real, valid mailboxes that
``doctor --deep`` accepts. They are kept in ``$XDG_CACHE_HOME/mailslot-bench/scale-v1``
(``~/.cache`` by default), outside the clone, and reused by later runs.
``MAILSLOT_BENCH_SCALE`` chooses the sizes (comma-separated, e.g. ``200,10000``).
The package is byte-compiled first, as ``pip install`` does (bench_hooks.py says why).

Shape: ten agents writing to each other in turn; of each agent's mail the oldest 90%
is done, then 5% read, the newest 5% unread. The measured agent is ``agent-0``.
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

from common import ROOT, VENV_BIN, Row

SIZES = ("200", "10000", "100000", "1000000", "1000000h")
"""``h``: history only: the open mail of the 100,000 mailbox (10,000 messages), the
rest done; plain sizes keep 10% of their mail open."""
OPEN_AS_AT_100K = 10_000
AGENTS = 10
VERSION = "scale-v1"
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
    from mailslot.core.message import Message, to_bytes

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
    store.repair_counts()


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


def _commands(mailbox: Path) -> dict[str, tuple[list[str], bytes | None]]:
    cli = [str(VENV_BIN / "mailslot"), "--dir", str(mailbox)]
    return {
        "inbox": ([*cli, "--agent", "agent-0", "inbox"], None),
        "who": ([*cli, "--agent", "agent-0", "who"], None),
        "hook session-start": ([str(VENV_BIN / "mailslot"), "hook", "claude",
                                "session-start"], b""),
        "doctor": ([*cli, "doctor"], None),
    }


def _session_start(n: int, cwd: Path) -> bytes:
    """A new session each time, so each run shows the mail (as a new session does)."""
    return json.dumps({"session_id": f"bench-scale-{os.getpid()}-{n}", "cwd": str(cwd),
                       "hook_event_name": "SessionStart", "source": "startup"}).encode()


def _time(argv: list[str], stdin: bytes | None, env: dict[str, str], cwd: Path) -> float:
    began = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env, cwd=cwd, check=False)
    return time.perf_counter() - began


def measure(mailbox: Path) -> dict[str, float]:
    """Each command's median over :data:`ROUNDS`, as a ratio of ``python -c pass``
    timed in the same rounds."""
    env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_AGENT"}
    env["MAILSLOT_DIR"] = str(mailbox)
    env["MAILSLOT_AGENT"] = "agent-0"
    cwd = mailbox.parent
    bare = [sys.executable, "-c", "pass"]
    times: dict[str, list[float]] = {"python -c pass": []}
    commands = _commands(mailbox)
    for n in range(ROUNDS):
        times["python -c pass"].append(_time(bare, None, env, cwd))
        for name, (argv, stdin) in commands.items():
            given = _session_start(n, cwd) if stdin is not None else None
            times.setdefault(name, []).append(_time(argv, given, env, cwd))
    base = statistics.median(times.pop("python -c pass"))
    return {name: statistics.median(t) / base for name, t in times.items()}


def run() -> list[Row]:
    compileall.compile_dir(str(ROOT / "src" / "mailslot"), quiet=1)
    sizes = _sizes()
    found: dict[str, dict[str, float]] = {}
    for size in sizes:
        found[size] = measure(_mailbox(size))
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
