"""ZCode, which cannot be installed here: ``install zcode`` writes its config, and a fake
``zcode`` on PATH runs the hooks from it the way ZCode's hook contract says (the config's
``hooks.enabled`` switch, ``hooks.events`` groups of ``command`` + ``args`` handlers, JSON
on stdin, Claude Code's output shapes), recording what each hook got and printed. This
proves mailslot's side only: docs/hosts.md says what stays unproven."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from hookkit import sender

Cli = Callable[..., Result]
SESSION = "sess_6a1f0c2e-93d4-4b7e-a8f5-2c0d9e1b4a76"

FAKE_ZCODE = r'''
"""A fake ZCode: one session (start, one prompt, one stop) whose hooks it runs from
~/.zcode/cli/config.json (and the project's .zcode/config.json with --trusted)."""
import json, os, subprocess, sys

FIXTURES = {"SessionStart": "zcode-session-start", "UserPromptSubmit":
            "zcode-user-prompt-submit", "Stop": "zcode-stop"}

def configs(trusted):
    paths = [os.path.expanduser("~/.zcode/cli/config.json")]
    if trusted:
        paths.append(os.path.join(os.getcwd(), ".zcode", "config.json"))
    for path in paths:
        if os.path.exists(path):
            with open(path) as f:
                yield json.load(f)

def run(event, trusted, record):
    payload = json.load(open(os.path.join(os.environ["FIXTURES"], FIXTURES[event] + ".json")))
    payload["cwd"] = os.getcwd()
    for config in configs(trusted):
        hooks = config.get("hooks", {})
        if hooks.get("enabled") is not True:
            continue
        for group in hooks.get("events", {}).get(event, []):
            if group.get("matcher", "") not in ("", "*", payload.get("source")):
                continue
            for handler in group["hooks"]:
                argv = [handler["command"], *handler.get("args", [])]
                done = subprocess.run(argv, input=json.dumps(payload), capture_output=True,
                                      text=True, timeout=hooks.get("timeoutMs", 60000) / 1000)
                with open(record, "a") as out:
                    out.write(json.dumps({"event": event, "argv": argv, "stdin": payload,
                                          "stdout": done.stdout, "code": done.returncode})
                              + "\n")

trusted = "--trusted" in sys.argv
for event in ("SessionStart", "UserPromptSubmit", "Stop"):
    run(event, trusted, os.environ["ZCODE_RECORD"])
'''


@pytest.fixture
def zcode(bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake ``zcode`` on PATH; it records into the returned file."""
    program = bin_dir / "zcode"
    program.write_text(f"#!{sys.executable}\n{FAKE_ZCODE}")
    program.chmod(0o755)
    monkeypatch.setenv("FIXTURES", str(Path(__file__).parent / "fixtures" / "hosts"))
    record = tmp_path / "zcode.jsonl"
    monkeypatch.setenv("ZCODE_RECORD", str(record))
    return record


def user_config(home: Path) -> dict[str, Any]:
    return dict(json.loads((home / ".zcode" / "cli" / "config.json").read_text()))


def run_session(record: Path, *options: str) -> list[dict[str, Any]]:
    subprocess.run(["zcode", *options], check=True, timeout=120, env=os.environ)
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


def test_install_writes_its_config(cli: Cli, isolated: Path) -> None:
    home = isolated / "home"
    path = home / ".zcode" / "cli" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"plugins": {"enabledPlugins": {"computer-use": True}},
                                "hooks": {"timeoutMs": 30000}}))
    r = cli("--agent", "ada", "install", "zcode", "--hooks")
    assert r.code == 0, r.err
    assert f"updated: {path}" in r.out and "hooks.enabled" in r.out
    doc = user_config(home)
    assert doc["plugins"] == {"enabledPlugins": {"computer-use": True}}
    exe = doc["mcp"]["servers"]["mailslot"]["command"]
    assert doc["mcp"]["servers"]["mailslot"]["args"][:3] == ["serve", "--agent", "ada"]
    assert doc["hooks"]["enabled"] is True and doc["hooks"]["timeoutMs"] == 30000
    events = doc["hooks"]["events"]
    assert list(events) == ["SessionStart", "UserPromptSubmit", "Stop"]
    assert events["SessionStart"] == [{"matcher": "", "hooks": [{
        "type": "command", "command": exe,
        "args": ["hook", "zcode", "session-start", "--agent", "ada", "--dir",
                 os.environ["MAILSLOT_DIR"]]}]}]
    again = cli("--agent", "ada", "install", "zcode", "--hooks")
    assert again.code == 0 and again.out.endswith("nothing changed.\n")
    other = cli("--agent", "bob", "install", "zcode", "--hooks")
    assert other.code == 1 and "already registers mailslot as agent 'ada'" in other.err


def test_an_explicit_switch_off_is_kept(cli: Cli, isolated: Path, zcode: Path) -> None:
    path = isolated / "home" / ".zcode" / "cli" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"hooks": {"enabled": False}}))
    assert cli("--agent", "ada", "install", "zcode", "--hooks").code == 0
    assert user_config(isolated / "home")["hooks"]["enabled"] is False
    assert run_session(zcode) == []  # ZCode runs none of them then


def test_mail_reaches_a_session_at_its_hooks(cli: Cli, root: Path, zcode: Path) -> None:
    assert cli("--agent", "ada", "install", "zcode", "--hooks").code == 0
    first = sender(root, "claude").send("ada", "Schema change", "users.name is full_name")
    config = json.loads((root / "config.json").read_text()) if (
        root / "config.json").exists() else {}
    config.setdefault("agents", {})["ada"] = {"auto_continue_on_stop": True}
    (root / "config.json").write_text(json.dumps(config))
    runs = run_session(zcode)
    assert [r["event"] for r in runs] == ["SessionStart", "UserPromptSubmit", "Stop"]
    assert all(r["code"] == 0 for r in runs)
    start = json.loads(runs[0]["stdout"])["hookSpecificOutput"]
    assert start["hookEventName"] == "SessionStart"
    assert first.id in start["additionalContext"] and "Schema change" in start[
        "additionalContext"]
    assert json.loads(runs[1]["stdout"]) == {}  # shown at the start already
    assert json.loads(runs[2]["stdout"]) == {}
    later = sender(root, "codex").send("ada", "Tests are green", "merge when ready")
    runs = run_session(zcode)[3:]
    assert later.id in json.loads(runs[0]["stdout"])["hookSpecificOutput"]["additionalContext"]
    assert runs[0]["stdin"]["session_id"] == SESSION


def test_project_hooks_run_only_in_a_trusted_workspace(cli: Cli, root: Path, zcode: Path,
                                                       isolated: Path) -> None:
    assert cli("--agent", "ada", "install", "zcode", "--hooks", "--scope", "project").code == 0
    assert (isolated / "work" / ".zcode" / "config.json").exists()
    sender(root, "claude").send("ada", "Hello", "there")
    assert run_session(zcode) == []
    runs = run_session(zcode, "--trusted")
    assert "Hello" in json.loads(runs[0]["stdout"])["hookSpecificOutput"]["additionalContext"]

