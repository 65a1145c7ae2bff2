"""Shared pieces of the benchmarks: timing helpers and the table every script prints.

Each ``bench_*.py`` module exposes ``run() -> list[Row]``. A row compares a measurement
with a baseline taken in the same run, because these machines are noisy.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


@dataclass
class Row:
    what: str
    measured: str
    baseline: str
    target: str
    ok: bool | None  # None: informational, no target


UNLIMITED = dict.fromkeys(("pair_sends_per_hour", "agent_sends_per_hour",
                           "pair_wakes_per_hour", "agent_wakes_per_hour",
                           "agent_bytes_per_hour", "thread_bytes_per_hour",
                           "thread_turns_per_hour"), 10**9)
"""A benchmark sends hundreds of messages between two agents in seconds: a loop, to the
loop governor. Its budgets are raised, not switched off, so every figure still pays for
its buckets (bench_governor.py measures what they cost) and nothing is refused."""


def new_session(stdin: bytes) -> bytes:
    """A hook's input (JSON) for a session never seen before, which is shown all of its
    mail (a session that was shown it already is only reminded of it)."""
    import json
    import uuid

    raw = json.loads(stdin)
    raw["session_id"] = f"bench-{uuid.uuid4()}"
    return json.dumps(raw).encode()


def unlimited(location: str | Path) -> None:
    """Raise the loop governor's limits in the mailbox at ``location`` (made if need
    be); every other setting is kept."""
    from mailslot.backends import open_store

    def change(raw: dict[str, object]) -> bool:
        section = raw.setdefault("governor", {})
        assert isinstance(section, dict)
        section.update(UNLIMITED)
        return True

    open_store(str(location)).update_config(change)


def per_second(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def percentile(samples: Sequence[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    """The fastest of ``repeats`` runs of ``fn``, in seconds (least disturbed by noise)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


class NotDone(RuntimeError):
    """What a benchmark timed failed or did not do its work: its figure would mean
    nothing (a command that fails at once looks fast), so the benchmark stops."""


Expect = Sequence[str] | Callable[[str], bool]
"""What a timed command's output must show: each of some strings, or a test of it."""


def did_work(done: subprocess.CompletedProcess[bytes], shows: Expect = (), *,
             quiet: bool = False) -> str:
    """``done``'s output, once it is known to have done its work: exit 0, its output
    showing what ``shows`` asks, and with ``quiet`` nothing on stderr (a hook says its
    failure there and exits 0 all the same). Raises :class:`NotDone` otherwise."""
    out = (done.stdout or b"").decode("utf-8", "replace")
    err = (done.stderr or b"").decode("utf-8", "replace").strip()
    missing = ([] if shows(out) else ["what doing the work prints"]) if callable(shows) \
        else [repr(s) for s in shows if s not in out]
    if done.returncode == 0 and not missing and not (quiet and err):
        return out
    argv = " ".join(map(str, done.args))
    raise NotDone(f"{argv[-120:]}: exit {done.returncode}"
                  + (f", no {missing[0]} in its output {out[-200:]!r}" if missing else "")
                  + (f", stderr {err[-300:]!r}" if err else ""))


def timed_run(argv: Sequence[str], shows: Expect = (), *, quiet: bool = False,
              stdout: int = subprocess.PIPE, **kwargs: object) -> float:
    """Seconds one whole process of ``argv`` took (its output read from a pipe, or sent
    where ``stdout`` says), checked by :func:`did_work` once the clock stopped."""
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE,  # type: ignore[call-overload]
                          **kwargs)
    took = time.perf_counter() - start
    did_work(done, shows, quiet=quiet)
    return took


def stored(location: str | Path, agent: str) -> int:
    """How many messages ``agent``'s mailbox at ``location`` holds, whatever their state."""
    from mailslot.backends import open_store
    from mailslot.core.message import STATES

    return len(open_store(str(location)).entries(agent, STATES))


def expect_stored(location: str | Path, agent: str, count: int) -> None:
    """``agent``'s mailbox holds ``count`` messages: the sends a benchmark timed were
    all stored (:class:`NotDone` otherwise)."""
    held = stored(location, agent)
    if held != count:
        raise NotDone(f"{agent} holds {held} messages at {location}, not {count}")


def listed(out: str) -> int:
    """How many messages an ``inbox`` listing shows: a line each, its state's mark, its
    short id (hex), then its date."""
    count = 0
    for line in out.splitlines():
        mark, _, rest = line.partition(" ")
        short, _, when = rest.partition("  ")
        count += mark in ("*", "·", "✓") and len(short) >= 6 and when[:2] == "20" \
            and all(c in "0123456789abcdef" for c in short)
    return count


def process_time(argv: Sequence[str], repeats: int = 15, shows: Expect = (),
                 **kwargs: Any) -> float:
    """Median wall time of a whole process, in seconds (each checked: :func:`timed_run`)."""
    return statistics.median(timed_run(argv, shows, **kwargs) for _ in range(repeats))


def print_table(rows: Sequence[Row]) -> None:
    headers = ("benchmark", "measured", "baseline (same run)", "target", "")
    cells = [
        (r.what, r.measured, r.baseline, r.target,
         "" if r.ok is None else ("ok" if r.ok else "MISSED"))
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("-" * len(line))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)))
