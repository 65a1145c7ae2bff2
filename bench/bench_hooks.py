"""``mailslot hook claude session-start`` as a whole process, 1,000 messages pending.

Baseline: ``python -c pass`` with the same interpreter, measured in the same run and
interleaved with the hook so that both see the same machine load. The package is
byte-compiled first, as ``pip install`` does: this measures an installed mailslot, not
one recompiled from source at every start (``PYTHONDONTWRITEBYTECODE`` is often set in
development shells).
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from common import ROOT, VENV_BIN, Row, ms
from mailslot import FileStore, Mailbox
from mailslot.identity import Identity

PENDING = 1000
ROUNDS = 15
TARGET = 2.5
FIXTURE = ROOT / "tests" / "fixtures" / "hosts" / "claude-session-start.json"


def _fill(root: Path) -> None:
    start = datetime(2026, 5, 20, 10, 0, tzinfo=UTC)
    for n in range(PENDING):
        when = start + timedelta(seconds=n)
        box = Mailbox(FileStore(root), Identity(f"peer-{n % 5}", "--agent"),
                      clock=lambda when=when: when)
        box.send("gemini", f"Status report {n}", f"Line one of {n}.\nLine two.\n" * 3)


def _time(argv: list[str], stdin: bytes, cwd: Path, env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, cwd=cwd, env=env, check=True)
    return time.perf_counter() - began


def run() -> list[Row]:
    compileall.compile_dir(str(ROOT / "src" / "mailslot"), quiet=1)
    stdin = FIXTURE.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mailbox"
        checkout = Path(tmp) / "gemini"  # identity from the git toplevel, as installed
        (checkout / ".git").mkdir(parents=True)
        _fill(root)
        env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_AGENT"}
        env["MAILSLOT_DIR"] = str(root)
        hook = [str(VENV_BIN / "mailslot"), "hook", "claude", "session-start"]
        bare = [sys.executable, "-c", "pass"]
        out = subprocess.run(hook, input=stdin, capture_output=True, cwd=checkout, env=env,
                             check=True).stdout
        assert b"Status report 999" in out, "the hook did not show the newest message"
        hooks: list[float] = []
        bases: list[float] = []
        for _ in range(ROUNDS):
            for _ in range(3):
                bases.append(_time(bare, b"", checkout, env))
                hooks.append(_time(hook, stdin, checkout, env))
    took, base = statistics.median(hooks), statistics.median(bases)
    ratio = took / base
    return [Row(f"hook claude session-start, {PENDING:,} pending (process)",
                f"{ms(took)} ({ratio:.2f}x)", f"python -c pass {ms(base)}",
                f"<= {TARGET}x", ratio <= TARGET)]
