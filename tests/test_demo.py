"""`make demo` runs scripts/demo.sh from the checkout: it must run to the end there, where
a process without --agent takes the checkout's name as its identity."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_demo_runs_to_the_end_from_a_checkout(tmp_path: Path) -> None:
    checkout = tmp_path / "main"  # the name a fresh clone of the project has
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILSLOT_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               TMPDIR=str(tmp_path), NO_COLOR="1")
    ran = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh")], cwd=checkout, env=env,
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr
    assert "error" not in ran.stderr
    out = ran.stdout
    assert "gemini replied" in out  # the sender's view of the answered message (its rung)
    assert "reply: " in out.split(" status ", 1)[1]  # status, asked as the sender, shows it
    assert "The demo mailbox was removed" in out
    assert not list(tmp_path.glob("mailslot-demo.*"))
