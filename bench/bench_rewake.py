"""Send -> Claude Code waiter exit: how soon an idle session would be woken.

Each round starts a real ``mailslot hook claude wait`` process, waits until it is armed
and watching, sends one message from this process, and times until the waiter has
exited (code 2). Baseline, same run: the send alone, so the table shows what the wake
itself adds. Target: p99 <= 250 ms over at least 100 messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from common import ROOT, VENV_BIN, Row, ms, percentile, unlimited
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity

ROUNDS = 100
TARGET = 0.250
STOP = (ROOT / "tests" / "fixtures" / "hosts" / "claude-stop.json").read_bytes()
SESSION = json.loads(STOP)["session_id"]


def _watching(pid: int, deadline: float) -> None:
    """Until the waiter's observer threads run (Linux: /proc), or a fixed grace period."""
    tasks = Path(f"/proc/{pid}/task")
    while time.monotonic() < deadline:
        if tasks.is_dir() and len(os.listdir(tasks)) >= 3:
            time.sleep(0.02)  # past its first look, into the wait
            return
        if not tasks.is_dir():
            time.sleep(0.5)
            return
        time.sleep(0.005)
    raise RuntimeError("the waiter never started watching")


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mailbox"
        unlimited(root)
        gemini = Mailbox(FileStore(root), Identity("gemini", "--agent"))
        gemini.send("codex", "warm-up", "creates the mailbox")
        gemini.choose_wake("claude", "claude-rewake")  # as install claude --hooks --wake
        env = {**os.environ, "MAILSLOT_DIR": str(root)}
        record = root / "waiters" / "claude" / SESSION
        wakes: list[float] = []
        sends: list[float] = []
        for n in range(ROUNDS):
            proc = subprocess.Popen(
                [str(VENV_BIN / "mailslot"), "hook", "claude", "wait", "--agent", "claude"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=env)
            assert proc.stdin is not None
            proc.stdin.write(STOP)
            proc.stdin.close()
            deadline = time.monotonic() + 30
            while not (record.is_file() and record.read_text() == str(proc.pid)):
                if time.monotonic() > deadline:
                    raise RuntimeError("the waiter never armed")
                time.sleep(0.005)
            _watching(proc.pid, deadline)
            began = time.perf_counter()
            gemini.send("claude", f"round {n}", "wake up")
            sent = time.perf_counter()
            code = proc.wait(timeout=30)
            woke = time.perf_counter()
            if code != 2:
                raise RuntimeError(f"the waiter exited {code}, not 2")
            sends.append(sent - began)
            wakes.append(woke - began)
    p50, p99 = percentile(wakes, 50), percentile(wakes, 99)
    baseline = f"send alone p50 {ms(percentile(sends, 50))}"
    return [
        Row(f"send -> waiter exit, p50 ({ROUNDS} msgs)", ms(p50), baseline, "", None),
        Row(f"send -> waiter exit, p99 ({ROUNDS} msgs)", ms(p99), baseline,
            f"<= {TARGET * 1000:.0f} ms", p99 <= TARGET),
    ]
