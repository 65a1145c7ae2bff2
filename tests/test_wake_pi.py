"""The ``pi`` wake: ``install pi --hooks --wake`` writes the extension's waiter and
chooses the method; the waiter (``hook pi wait``) wakes only for that choice; the
watcher counts a running waiter. The real Pi is in tests/hosts/test_wake_pi.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from conftest import Result
from hookkit import sender
from mailslot import FileStore
from wake_helpers import configure, events

Cli = Callable[..., Result]
EXTENSION = Path(".pi") / "extensions" / "mailslot.ts"


def wake_of(root: Path, agent: str = "ada") -> dict[str, object]:
    return dict(json.loads((root / "config.json").read_text())["agents"][agent])


def test_install_with_wake_writes_the_waiter_and_chooses_it(cli: Cli, root: Path) -> None:
    r = cli("--agent", "ada", "install", "pi", "--hooks", "--wake")
    assert r.code == 0, r.err
    assert 'wake_method "pi"' in r.out
    text = EXTENSION.read_text()
    assert "const WAKE: boolean = true;" in text and '"hook", "pi", "wait"' in text
    assert wake_of(root) == {"wake_on_mail": True, "wake_method": "pi"}
    again = cli("--agent", "ada", "install", "pi", "--hooks")  # no --wake: no waiter
    assert again.code == 0, again.err
    assert "const WAKE: boolean = false;" in EXTENSION.read_text()
    assert wake_of(root)["wake_method"] == "unsupported"


def test_wake_needs_the_hooks(cli: Cli) -> None:
    r = cli("--agent", "ada", "install", "pi", "--wake")
    assert r.code == 2 and "pi: needs --hooks" in r.err and "nothing was changed" in r.err
    assert not EXTENSION.exists()


def waiter(root: Path, agent: str) -> subprocess.CompletedProcess[str]:
    """``hook pi wait`` run as the extension runs it; mail is there already, so it ends
    at once (a minute: a loaded machine can take seconds just to start Python)."""
    return subprocess.run([sys.executable, "-m", "mailslot", "hook", "pi", "wait",
                           "--agent", agent], input=json.dumps({"session_id": "01a2-pi"}),
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "MAILSLOT_DIR": str(root)})


def test_the_waiter_prints_the_notice_and_exits_2_for_mail(root: Path) -> None:
    configure(root, {"ada": {"wake_on_mail": True, "wake_method": "pi"}})
    sent = sender(root, "bob").send("ada", "Secret subject", "Secret body")
    done = waiter(root, "ada")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"[mailslot] ada, you have new mail: bob sent message "
                                  f"{sent.id}.")
    assert "Secret" not in done.stderr


def test_the_waiter_leaves_when_the_config_chooses_another_wake(root: Path) -> None:
    configure(root, {"ada": {"wake_on_mail": True, "wake_method": "claude-rewake"}})
    sender(root, "bob").send("ada", "hello", "x")
    done = waiter(root, "ada")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_watcher_counts_a_running_waiter_only(root: Path, cli: Cli) -> None:
    configure(root, {"ada": {"wake_on_mail": True, "wake_method": "pi",
                             "wake_retry": {"attempts": 1, "backoff_seconds": 0}}})
    sender(root, "bob").send("ada", "hello", "x")
    assert cli("watch", "--once").code == 0
    failed = [e for e in events(root) if e["event"] == "wake_failed"]
    assert failed and "no Pi session of this agent has a waiter running" in json.dumps(failed)
    FileStore(root).set_waiter("ada", "01a2-pi", os.getpid())
    sender(root, "bob").send("ada", "again", "x")
    assert cli("watch", "--once").code == 0
    assert events(root)[-1]["event"] == "wake_ok"
    shown = cli("watch", "--validate")
    assert "install pi --hooks --wake" in shown.out and "pi -p" in shown.out
