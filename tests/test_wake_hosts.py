"""Host CLIs woken through fakes on PATH: exact argv, env, no permission bypass, no secrets."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from mailslot import FileStore, Mailbox
from mailslot.core.errors import StoreError
from mailslot.core.ids import reference
from mailslot.core.message import Message
from mailslot.wake.methods import CommandMethod, bypass_flag
from mailslot.wake.notice import wake_notice
from mailslot.wake.runner import WakeRunner
from wake_helpers import BYPASS, calls, configure, events, fake_host

Box = Callable[[str | None], Mailbox]
SESSION = "5f0c1b2e-8a7d-4c1e-9b3a-2d4e6f8a0b1c"


def wake_once(box: Box, root: Path, agent: str, config: dict[str, Any]) -> str:
    configure(root, {agent: {"wake_on_mail": True, **config}})
    message = box("claude").send(agent, "Private subject", "secret body")
    WakeRunner(FileStore(root)).run_agent(agent)
    return message.id


def assert_clean_notice(notice: str, message_id: str) -> None:
    assert notice.startswith("[mailslot]") and "\n" not in notice
    assert "claude sent message" in notice and message_id in notice and "read your mail" in notice
    assert "Private subject" not in notice and "secret body" not in notice


@pytest.mark.parametrize(("host", "argv"), [
    ("claude", lambda n: ["-p", n, "--resume", SESSION]),
    ("codex", lambda n: ["exec", "resume", SESSION, n]),
    ("gemini", lambda n: ["--resume", SESSION, "-p", n]),
    ("grok", lambda n: ["--resume", SESSION, "-p", n]),  # Grok Build
    ("kilo", lambda n: ["run", "--session", SESSION, n]),
    ("droid", lambda n: ["exec", "-s", SESSION, n]),
])
def test_resume_hosts_get_exact_argv_and_no_bypass_flag(
        box: Box, root: Path, bin_dir: Path, host: str, argv: Callable[[str], list[str]]) -> None:
    record = fake_host(bin_dir, host)
    project = root.parent / "project"
    project.mkdir()
    mid = wake_once(box, root, "gemini",
                    {"wake_method": host, "session_id": SESSION, "cwd": str(project)})
    [call] = calls(record)
    notice = next(arg for arg in call["argv"] if arg.startswith("[mailslot]"))
    assert_clean_notice(notice, mid)
    assert call["argv"] == argv(notice)
    assert not any(flag in arg for arg in call["argv"] for flag in BYPASS)
    assert call["cwd"] == str(project)
    assert call["env"]["MAILSLOT_AGENT"] == "gemini"
    assert [e["event"] for e in events(root)][-1] == "wake_ok"


@pytest.mark.parametrize(("method", "host", "argv"), [
    ("codex-queue", "codex", lambda n: ["queue", "--thread", SESSION, "--message", n]),
    ("codex", "codex", lambda n: ["exec", "resume", SESSION, n]),
    ("claude", "claude", lambda n: ["-p", n, "--resume", SESSION]),
    ("gemini", "gemini", lambda n: ["--resume", SESSION, "-p", n]),
    ("droid", "droid", lambda n: ["exec", "-s", SESSION, n]),
])
def test_latest_wakes_the_session_the_session_start_hook_recorded(
        box: Box, root: Path, bin_dir: Path, cli: Callable[..., Result], method: str,
        host: str, argv: Callable[[str], list[str]]) -> None:
    record = fake_host(bin_dir, host)
    box("claude").send("codex", "warm-up", "so the mailbox exists")
    older = json.dumps({"hook_event_name": "SessionStart", "session_id": "older-1",
                        "source": "startup", "cwd": str(root)})
    for session in ("older-1", SESSION):
        event = "session-start"
        r = cli("--agent", "gemini", "hook", host, event,
                stdin=older.replace("older-1", session))
        assert r.code == 0
    wake_once(box, root, "gemini", {"wake_method": method, "session_id": "latest",
                                    "cwd": str(root)})
    [call] = calls(record)
    notice = next(arg for arg in call["argv"] if arg.startswith("[mailslot]"))
    assert call["argv"] == argv(notice)


def test_latest_with_no_session_recorded_fails_the_attempt_and_says_why(
        box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "codex")
    wake_once(box, root, "gemini", {"wake_method": "codex-queue", "session_id": "latest",
                                    "wake_retry": {"attempts": 1}})
    assert calls(record) == []
    assert "no codex session of gemini is recorded yet" in events(root)[-1]["reason"]


def test_kilo_refuses_latest_since_no_hook_records_its_sessions(
        box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "kilo")
    wake_once(box, root, "gemini", {"wake_method": "kilo", "session_id": "latest"})
    assert calls(record) == []
    reason = events(root)[-1]["reason"]
    assert 'agents.gemini.session_id cannot be "latest" for kilo' in reason
    assert "kilo session list" in reason


def test_a_session_id_cannot_smuggle_a_flag(box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "claude")
    wake_once(box, root, "gemini", {"wake_method": "claude",
                                    "session_id": "--dangerously-skip-permissions"})
    assert calls(record) == []
    assert "agents.gemini.session_id is not a session id" in events(root)[-1]["reason"]


@pytest.mark.parametrize("argv", [
    ["claude", "--dangerously-skip-permissions", "-p", "{id}"],
    ["codex", "exec", "-a", "never", "{id}"],
    ["codex", "exec", "--sandbox=danger-full-access"],
    ["codex", "exec", "-c", "approval_policy=never"],
    ["gemini", "--approval-mode", "yolo"],
    ["copilot", "--allow-all-tools"],
    ["grok", "--always-approve", "-p", "{id}"],
    ["kilo", "run", "--auto", "{id}"],
    ["kilo", "run", "--yolo", "{id}"],
    ["kilo", "run", "--dangerously-skip-permissions", "{id}"],
    ["droid", "exec", "--skip-permissions-unsafe", "{id}"],
    ["droid", "exec", "--auto", "high", "{id}"],
    ["droid", "exec", "--auto=medium", "{id}"],
])
def test_command_templates_with_bypass_flags_are_refused(argv: list[str]) -> None:
    assert bypass_flag(argv) is not None
    with pytest.raises(StoreError, match=r"agents\.x\.command holds .* permission prompts"):
        CommandMethod.from_config("x", {"command": argv})


@pytest.mark.parametrize("argv", [
    ["gemini", "-y"],
    ["codex", "-anever"],
    ["codex", "-sdanger-full-access"],
    ["codex", '-capproval_policy="never"'],
    ["codex", "-c", "sandbox_mode='danger-full-access'"],
    ["codex", "--ask-for-approval='never'"],
    ["codex", "-a=never"],
])
def test_short_glued_and_quoted_bypass_flags_are_refused_too(argv: list[str]) -> None:
    with pytest.raises(StoreError, match=r"agents\.x\.command holds .* permission prompts"):
        CommandMethod.from_config("x", {"command": argv})


BYPASS_SETTINGS = '{"permissions":{"defaultMode":"bypassPermissions"}}'


@pytest.mark.parametrize("argv", [
    ["claude", "--settings", BYPASS_SETTINGS, "-p", "{id}"],
    ["claude", f"--settings={BYPASS_SETTINGS}", "-p", "{id}"],
    ["claude", "--settings", f" {BYPASS_SETTINGS}\n"],
    ["claude", "--settings", '{"permissions": {"allow": ["Bash"], '
                             '"defaultMode": "bypassPermissions"}, "model": "x"}'],
    ["claude", "--settings", "{FILE}", "-p", "{id}"],
    ["claude", "--settings={FILE}"],
    ["claude", "--settings", "bypass.json"],  # relative: in the method's cwd
])
def test_a_settings_argument_that_sets_a_bypass_mode_is_refused(
        tmp_path: Path, argv: list[str]) -> None:
    """Claude Code takes whole settings for a run (``--settings``, inline JSON or a
    file's path): one that sets ``bypassPermissions`` is a bypass like the flag."""
    settings = tmp_path / "bypass.json"
    settings.write_text(BYPASS_SETTINGS)
    argv = [a.replace("{FILE}", str(settings)) for a in argv]
    assert "permissions.defaultMode: bypassPermissions" in str(bypass_flag(argv, str(tmp_path)))
    with pytest.raises(StoreError, match=r"agents\.x\.command holds --settings .*"
                                         r"bypassPermissions.*permission prompts"):
        CommandMethod.from_config("x", {"command": argv, "cwd": str(tmp_path)})


@pytest.mark.parametrize(("value", "said"), [
    ("{not json", "not JSON"),
    ("/no/such/settings.json", "cannot be read"),
    ("/dev/null/x", "cannot be read"),
    ("{FOLDER}", "not a settings file"),
])
def test_a_settings_argument_that_cannot_be_checked_is_refused(
        tmp_path: Path, value: str, said: str) -> None:
    argv = ["claude", "--settings", value.replace("{FOLDER}", str(tmp_path)), "-p", "{id}"]
    assert said in str(bypass_flag(argv))
    with pytest.raises(StoreError, match="holds --settings"):
        CommandMethod.from_config("x", {"command": argv})


def test_settings_that_set_no_bypass_mode_pass(tmp_path: Path) -> None:
    settings = tmp_path / "plain.json"
    settings.write_text('{"permissions": {"defaultMode": "acceptEdits", "allow": ["Read"]}}')
    for argv in (["claude", "--settings", str(settings), "-p", "{id}"],
                 ["claude", '--settings={"model": "opus"}'],
                 ["claude", "--settings", '{"permissions": "bypassPermissions"}']):
        assert bypass_flag(argv) is None
        CommandMethod.from_config("x", {"command": argv})


def test_a_settings_bypass_in_a_woken_program_is_refused_at_wake_time_too(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    """A settings file that was plain when config.json was written and bypasses when a
    wake runs: the wake is refused and nothing runs."""
    record = fake_host(bin_dir, "notify")
    settings = tmp_path / "team.json"
    settings.write_text("{}")
    configure(root, {"gemini": {"wake_on_mail": True, "wake_method": "command",
                                "command": ["notify", "--settings", str(settings), "{id}"],
                                "wake_retry": {"attempts": 1}}})
    settings.write_text(BYPASS_SETTINGS)
    box("codex").send("gemini", "hi", "x")
    WakeRunner(FileStore(root)).run_agent("gemini")
    assert calls(record) == []
    reason = events(root)[-1]["reason"]
    assert "bypassPermissions" in reason and "permission prompts" in reason


def test_plain_argv_has_no_bypass_flag() -> None:
    assert bypass_flag(["codex", "exec", "resume", "abc", "-a"]) is None
    assert bypass_flag(["notify", "--sandbox", "workspace-write"]) is None
    assert bypass_flag(["notify", "-aalways", "-cmodel=o3", "-your-own"]) is None


def test_missing_host_program_is_a_failed_attempt(box: Box, root: Path, bin_dir: Path) -> None:
    wake_once(box, root, "gemini", {"wake_method": "gemini", "session_id": SESSION,
                                    "executable": str(bin_dir / "no-such-gemini"),
                                    "wake_retry": {"attempts": 1}})
    assert events(root)[-1]["reason"] == "no-such-gemini was not found on PATH"


def test_notice_lists_a_batch_and_holds_nothing_a_shell_acts_on() -> None:
    mail = [Message(id=f"2026-01-01_000000.00000{n}_codex_to_gemini_s_abcde{n}", date="",
                    sender="codex", to=("gemini",), subject="$(rm -rf ~)`x`", body=";|&")
            for n in range(3)]
    cli = "/opt/ms/bin/mailslot --agent gemini --dir /home/u/box"
    notice = wake_notice("gemini", mail, cli)
    assert "3 new messages" in notice and all(reference(m.id) in notice for m in mail)
    assert "_s_" not in notice  # an older id's subject slug is text a sender chose
    assert f"the command {cli} inbox or" in notice
    assert re.fullmatch(r"[A-Za-z0-9 ,.:_/\[\]-]+", notice)
    many = wake_notice("gemini", mail * 5, cli)
    assert "and 5 more" in many and "\n" not in many


def test_latest_wakes_the_one_session_instance_mail_is_for(
        box: Box, root: Path, bin_dir: Path, cli: Callable[..., Result]) -> None:
    """Mail to ``gemini@older`` resumes that session, not the latest."""
    record = fake_host(bin_dir, "claude")
    box("claude").send("codex", "warm-up", "so the mailbox exists")
    start = json.dumps({"hook_event_name": "SessionStart", "session_id": "older-1",
                        "source": "startup", "cwd": str(root)})
    for session in ("older-1", SESSION):
        assert cli("--agent", "gemini", "hook", "claude", "session-start",
                   stdin=start.replace("older-1", session)).code == 0
    configure(root, {"gemini": {"wake_on_mail": True, "wake_method": "claude",
                                "session_id": "latest", "cwd": str(root)}})
    box("claude").send("gemini@olde", "Private subject", "secret body")
    WakeRunner(FileStore(root)).run_agent("gemini")
    [call] = calls(record)
    assert call["argv"][-2:] == ["--resume", "older-1"]
