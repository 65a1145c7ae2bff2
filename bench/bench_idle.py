"""CPU time of the long-running processes over 5 s of idleness: Claude Code's waiter,
``watch`` and ``serve --channel`` (each was once able to spin a core on its own reads)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from common import ROOT, Row

sys.path.insert(0, str(ROOT / "tests"))

from idle import idle_cpu, idle_processes  # the tests' own harness

SECONDS = 5.0
TARGET = 0.25  # CPU seconds over the 5 s: a small fraction of one


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp, \
            idle_processes(Path(tmp) / "mailbox", Path(tmp) / "watch.log") as procs:
        used = idle_cpu(procs, SECONDS)
    return [Row(f"idle {kind}, CPU over {SECONDS:g} s", f"{seconds:.2f} s", "-",
                f"<= {TARGET} s", seconds <= TARGET) for kind, seconds in used.items()]
