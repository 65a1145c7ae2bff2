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
                           "pair_wakes_per_hour", "agent_wakes_per_hour"), 10**9)
"""A benchmark sends hundreds of messages between two agents in seconds: a loop, to the
loop governor. Its limits are raised, not switched off, so every figure still pays for
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
    from mailslot.store import open_store

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


def process_time(argv: Sequence[str], repeats: int = 15, **kwargs: object) -> float:
    """Median wall time of a whole process, in seconds."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


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
