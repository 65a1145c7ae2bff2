"""``mailslot send``, ``inbox`` and ``who`` as whole processes (≤ 3 × ``python -c
pass``), interleaved with the baseline so both see the same machine load.

The mailbox holds 200 messages for the reader and a handful of agents, as a working day
might. The package is byte-compiled first, as ``pip install`` does.
"""

from __future__ import annotations

import compileall
import os
import statistics
import sys
import tempfile
from pathlib import Path

from common import ROOT, VENV_BIN, Expect, Row, listed, ms, timed_run, unlimited
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity

ROUNDS = 15
TARGET = 3.0
MAIL = 200


def run() -> list[Row]:
    compileall.compile_dir(str(ROOT / "src" / "mailslot"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mailbox"
        unlimited(root)
        for n in range(MAIL):
            sender = f"peer-{n % 5}"
            Mailbox(FileStore(root), Identity(sender, "--agent")).send(
                "gemini", f"Status report {n}", "Line one.\nLine two.\n")
        env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_AGENT"}
        env["MAILSLOT_DIR"] = str(root)
        mailslot = str(VENV_BIN / "mailslot")
        commands: dict[str, tuple[list[str], Expect]] = {  # and what doing it prints
            "send": ([mailslot, "--agent", "claude", "send", "--to", "gemini", "--subject",
                      "bench", "--body", "x"], ["sent ", " to gemini"]),
            "inbox": ([mailslot, "--agent", "gemini", "inbox"], lambda out: listed(out) == 20),
            "who": ([mailslot, "who"], ["gemini ", "peer-4 "]),
        }
        bare = [sys.executable, "-c", "pass"]
        times: dict[str, list[float]] = {name: [] for name in commands}
        bases: list[float] = []
        for _ in range(ROUNDS):
            for name, (argv, shows) in commands.items():
                bases.append(timed_run(bare, env=env))
                times[name].append(timed_run(argv, shows, env=env))
    base = statistics.median(bases)
    rows = []
    for name, samples in times.items():
        took = statistics.median(samples)
        ratio = took / base
        rows.append(Row(f"mailslot {name} (process)", f"{ms(took)} ({ratio:.2f}x)",
                        f"python -c pass {ms(base)}", f"<= {TARGET}x", ratio <= TARGET))
    return rows
