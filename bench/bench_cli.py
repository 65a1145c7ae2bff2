"""``mailslot send``, ``inbox`` and ``who`` as whole processes (≤ 3 × ``python -c
pass``), interleaved with the baseline so both see the same machine load.

The mailbox holds 200 messages for the reader and a handful of agents, as a working day
might. The package is byte-compiled first, as ``pip install`` does.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, VENV_BIN, Row, ms, unlimited
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity

ROUNDS = 15
TARGET = 3.0
MAIL = 200


def _time(argv: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, env=env, check=True)
    return time.perf_counter() - began


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
        commands = {
            "send": [mailslot, "--agent", "claude", "send", "--to", "gemini", "--subject",
                     "bench", "--body", "x"],
            "inbox": [mailslot, "--agent", "gemini", "inbox"],
            "who": [mailslot, "who"],
        }
        bare = [sys.executable, "-c", "pass"]
        times: dict[str, list[float]] = {name: [] for name in commands}
        bases: list[float] = []
        for _ in range(ROUNDS):
            for name, argv in commands.items():
                bases.append(_time(bare, env))
                times[name].append(_time(argv, env))
    base = statistics.median(bases)
    rows = []
    for name, samples in times.items():
        took = statistics.median(samples)
        ratio = took / base
        rows.append(Row(f"mailslot {name} (process)", f"{ms(took)} ({ratio:.2f}x)",
                        f"python -c pass {ms(base)}", f"<= {TARGET}x", ratio <= TARGET))
    return rows
