"""How long each step of the delivery ladder takes: ``status --json`` gives each
recipient's seconds from stored to every rung it reached, ``mailslot stats`` the p50 and
p99 of each step per agent and host, from the events log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from support import put_config, run_cli

OWNER = "sarah"


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC) - timedelta(hours=1)

    def __call__(self) -> datetime:
        return self.now


def hook(root: Path, agent: str) -> None:
    """A Claude Code session start of ``agent``, its output to a pipe."""
    payload = {"session_id": f"s-{agent}", "hook_event_name": "SessionStart",
               "source": "startup", "cwd": os.getcwd()}
    subprocess.run([sys.executable, "-m", "mailslot", "--agent", agent, "hook", "claude",
                    "session-start"], input=json.dumps(payload).encode(), capture_output=True,
                   env={**os.environ, "MAILSLOT_DIR": str(root)}, timeout=60, check=True)


def test_stats_give_each_steps_p50_and_p99_per_agent_and_host(root: Path) -> None:
    store = FileStore(root)
    put_config(store, {"owner": OWNER})
    clock = Clock()
    alice = Mailbox(store, Identity("alice", "--agent"), clock=clock)
    bob = Mailbox(store, Identity("bob", "--agent"))
    sent = [alice.send("bob", f"n{n}", "x", new=True) for n in range(3)]
    alice.send("carol", "other", "x", new=True)
    hook(root, "bob")  # shown to bob's model in Claude Code, an hour after it was stored
    for message in sent[:2]:
        bob.read(message.id)
    bob.reply(sent[0].id, "done it")
    done = run_cli("--dir", str(root), "stats", "--json")
    assert done.returncode == 0, done.stderr
    rows = {(r["agent"], r["host"], r["step"]): r for r in json.loads(done.stdout)}
    assert {k for k in rows if k[0] == "bob"} == {
        ("bob", "claude", "surfaced"), ("bob", "claude", "read"),
        ("bob", "claude", "replied")}
    shown = rows[("bob", "claude", "surfaced")]
    assert shown["count"] == 3 and 3500 < shown["p50_seconds"] <= shown["p99_seconds"] < 3700
    assert rows[("bob", "claude", "read")]["count"] == 2
    assert rows[("bob", "claude", "read")]["p99_seconds"] < 60  # from surfaced, not stored
    text = run_cli("--dir", str(root), "stats", "bob").stdout.splitlines()
    assert text[0].split() == ["AGENT", "HOST", "STEP", "N", "P50", "P99"]
    assert any(line.split()[:4] == ["bob", "claude", "->", "surfaced"] for line in text)
    later = run_cli("--dir", str(root), "stats", "--since", "30m").stdout
    assert later.strip() == "no mail delivered in that time"
    carol = run_cli("--dir", str(root), "--agent", "carol", "stats", "--json")
    assert json.loads(carol.stdout) == []  # only the ladder of what it sent or got
    bad = run_cli("--dir", str(root), "stats", "--since", "yesterday")
    assert bad.returncode == 2 and bad.stderr.startswith("mailslot: error: --since must be")
    timing = alice.status(sent[0].id).recipients[0].timing
    assert timing is not None and set(timing) == {"surfaced", "read", "done", "replied"}
    assert 3500 < timing["surfaced"] <= timing["read"] <= timing["replied"]
